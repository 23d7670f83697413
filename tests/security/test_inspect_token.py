"""``mcpkit inspect`` opens the browser without its access token on the command line: the
browser gets the ``file://`` URI of a private redirect file holding a one-time code, and the
code, once spent, is refused. The browser is the real user mechanism ``$BROWSER`` (which
Python's webbrowser honours): a script that records the argv it was started with."""

from __future__ import annotations

import os
import queue
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.helpers.paths import DEMO, ROOT, subprocess_env

httpx = pytest.importorskip("httpx")

URL_LINE = re.compile(r"^mcpkit inspect: open (http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))$")
RECORDER = """\
import json, os, sys
with open(os.environ["MCPKIT_TEST_BROWSER_ARGV"], "w") as f:
    json.dump(sys.argv, f)
"""


@dataclass
class Opened:
    base: str
    token: str
    argv: list[str]
    cmdlines: list[list[str]]
    proc: subprocess.Popen[str]


def _cmdlines() -> list[list[str]]:
    """Every process's command line that this user can read (what ``ps`` shows)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            out.append([a.decode(errors="replace") for a in raw.split(b"\0") if a])
    return out


@contextmanager
def inspector_with_browser(tmp_path: Path, timeout: float = 30.0) -> Iterator[Opened]:
    """``mcpkit inspect --port 0 -- python demo.py`` with $BROWSER set to a recorder that
    waits a moment (so its command line can be read meanwhile)."""
    record = tmp_path / "argv.json"
    script = tmp_path / "browser"
    script.write_text(f"#!{sys.executable}\n" + RECORDER + "import time\ntime.sleep(1.0)\n")
    script.chmod(0o700)
    env = subprocess_env(BROWSER=str(script), MCPKIT_TEST_BROWSER_ARGV=str(record))
    argv = [sys.executable, "-m", "mcpkit", "inspect", "--port", "0", "--", sys.executable, str(DEMO)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    try:
        assert proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        stdout = proc.stdout
        threading.Thread(target=lambda: [lines.put(ln) for ln in iter(stdout.readline, "")], daemon=True).start()
        deadline = time.monotonic() + timeout
        match = None
        seen = []
        while match is None:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no URL line: {seen}") from None
            seen.append(line)
            match = URL_LINE.match(line.rstrip("\n"))
        _url, port, token = match.groups()
        cmdlines: list[list[str]] = []
        while not record.exists():
            assert time.monotonic() < deadline, "the browser was not started"
            cmdlines.extend(_cmdlines())  # while the "browser" runs
            time.sleep(0.05)
        cmdlines.extend(_cmdlines())
        import json

        time.sleep(0.1)
        yield Opened(f"http://127.0.0.1:{port}", token, json.loads(record.read_text()), cmdlines, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _redirect_file(opened: Opened) -> Path:
    uri = opened.argv[-1]
    assert uri.startswith("file://"), opened.argv
    return Path(unquote(urlsplit(uri).path))


def _code_url(path: Path) -> str:
    m = re.search(r'url=(http://127\.0\.0\.1:\d+/\?code=[\w-]+)"', path.read_text())
    assert m, path.read_text()
    return m.group(1)


def test_no_token_on_the_browsers_command_line(tmp_path):
    with inspector_with_browser(tmp_path) as opened:
        assert not any(opened.token in arg for arg in opened.argv), opened.argv
        assert not any("code=" in arg for arg in opened.argv)
        assert not any(opened.token in arg for cmd in opened.cmdlines for arg in cmd)
        assert any(str(tmp_path / "browser") in " ".join(cmd) for cmd in opened.cmdlines)  # it was seen running
        path = _redirect_file(opened)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert opened.token not in path.read_text()


def test_the_one_time_code_opens_the_page_once(tmp_path):
    with inspector_with_browser(tmp_path) as opened:
        path = _redirect_file(opened)
        url = _code_url(path)
        first = httpx.get(url, timeout=10)
        assert first.status_code == 303
        assert first.headers["location"] == f"/?token={opened.token}"
        page = httpx.get(opened.base + first.headers["location"], timeout=10)
        assert page.status_code == 200 and opened.token in page.text
        assert not path.exists()  # the file goes once its code is spent
        again = httpx.get(url, timeout=10)
        assert again.status_code == 403 and "used already" in again.json()["error"]
        assert httpx.get(opened.base + "/?code=made-up", timeout=10).status_code == 403
        directory = path.parent
    assert not directory.exists()  # removed when the inspector stops


def test_the_code_url_keeps_the_host_and_origin_guard(tmp_path):
    with inspector_with_browser(tmp_path) as opened:
        url = _code_url(_redirect_file(opened))
        assert httpx.get(url, headers={"Origin": "http://evil.example"}, timeout=10).status_code == 403
        port = urlsplit(url).port
        assert httpx.get(url, headers={"Host": f"evil.example:{port}"}, timeout=10).status_code == 403
        assert httpx.get(url, timeout=10).status_code == 303  # not spent by the refused tries
        assert httpx.get(opened.base + "/api/card", timeout=10).status_code == 403  # the API still needs the token
