"""``mcpkit inspect``: the command as users run it (a real subprocess against
``examples/demo.py`` over stdio), its access guard (token, Origin, Host) and its JSON API."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from tests.helpers.paths import DEMO, subprocess_env

httpx = pytest.importorskip("httpx")

URL_LINE = re.compile(r"^mcpkit inspect: open (http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))$")


@dataclass
class Running:
    url: str
    base: str
    token: str
    lines: list[str]
    proc: subprocess.Popen[str]

    def api(self, method: str, path: str, **kw: object) -> httpx.Response:
        headers = {"X-Inspector-Token": self.token, **kw.pop("headers", {})}  # type: ignore[dict-item]
        return httpx.request(method, self.base + path, headers=headers, timeout=30, **kw)  # type: ignore[arg-type]


@contextmanager
def running_inspector(*target: str, timeout: float = 30.0) -> Iterator[Running]:
    """``python -m mcpkit inspect --no-browser --port 0 TARGET...``, until its URL line."""
    argv = [sys.executable, "-m", "mcpkit", "inspect", "--no-browser", "--port", "0", *target]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=subprocess_env())
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        out: queue.Queue[str] = queue.Queue()
        stdout = proc.stdout

        def pump() -> None:  # every line (the pipe never fills), then "" at the end
            for ln in iter(stdout.readline, ""):
                out.put(ln)
            out.put("")

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        match = None
        while match is None:
            try:
                line = out.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no URL line from mcpkit inspect in {timeout:g} s: {lines}") from None
            if not line:
                raise AssertionError(f"mcpkit inspect exited ({proc.wait()}): {lines}")
            lines.append(line.rstrip("\n"))
            match = URL_LINE.match(lines[-1])
        url, port, token = match.groups()
        yield Running(url, f"http://127.0.0.1:{port}", token, lines, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


DEMO_TARGET = ("--", sys.executable, str(DEMO))


@pytest.fixture(scope="module")
def demo() -> Iterator[Running]:
    with running_inspector(*DEMO_TARGET) as running:
        yield running


def test_prints_a_url_with_a_token_and_the_server_it_connected_to(demo: Running) -> None:
    assert any(line.startswith("mcpkit inspect: connected to mcpkit-demo (") for line in demo.lines), demo.lines
    assert len(demo.token) >= 24


def test_the_page_is_served_with_the_token_and_refused_without(demo: Running) -> None:
    ok = httpx.get(demo.url, timeout=10)
    assert ok.status_code == 200 and "mcpkit inspect" in ok.text
    assert demo.token in ok.text  # the page sends it back on its API calls
    assert httpx.get(demo.base + "/", timeout=10).status_code == 403
    assert httpx.get(demo.base + "/?token=wrong", timeout=10).status_code == 403
    assert httpx.get(demo.base + "/static/app.js", timeout=10).status_code == 403
    assert httpx.get(f"{demo.base}/static/app.js?token={demo.token}", timeout=10).status_code == 200
    assert httpx.get(demo.base + "/api/card", timeout=10).status_code == 403
    assert httpx.get(demo.base + "/api/card", headers={"X-Inspector-Token": "x" * 32}, timeout=10).status_code == 403


def test_a_foreign_origin_or_host_is_refused_even_with_the_token(demo: Running) -> None:
    assert demo.api("GET", "/api/card", headers={"Origin": "http://evil.example"}).status_code == 403
    assert demo.api("POST", "/api/call", json={"name": "add", "arguments": {"a": 1, "b": 1}},
                    headers={"Origin": "http://127.0.0.1:1"}).status_code == 403
    # DNS rebinding: a page of another name resolving to 127.0.0.1
    assert demo.api("GET", "/api/card", headers={"Host": "evil.example"}).status_code == 403
    same = demo.base.replace("http://", "")
    assert demo.api("GET", "/api/card", headers={"Origin": f"http://{same}"}).status_code == 200


def test_card_has_name_era_and_caching_hints(demo: Running) -> None:
    card = demo.api("GET", "/api/card").json()
    assert card["connected"] is True
    assert card["serverInfo"]["name"] == "mcpkit-demo"
    assert card["era"] == "modern"  # over stdio the server is started once: no second, legacy-only start
    assert card["transport"] == "stdio"
    assert card["discover"]["ttlMs"] == 60_000 and card["discover"]["cacheScope"] == "public"


def test_lists(demo: Running) -> None:
    tools = [t["name"] for t in demo.api("GET", "/api/tools").json()["items"]]
    assert {"add", "count_down", "convert_temperature", "save_note"} <= set(tools)
    assert "demo://clock" in [r["uri"] for r in demo.api("GET", "/api/resources").json()["items"]]
    assert "notes://{name}" in [r["uriTemplate"] for r in demo.api("GET", "/api/templates").json()["items"]]
    assert demo.api("GET", "/api/prompts").json()["items"]


def test_call_tool_with_timing_and_progress(demo: Running) -> None:
    out = demo.api("POST", "/api/call", json={"name": "add", "arguments": {"a": 2, "b": 3}}).json()
    assert out["result"]["structuredContent"] == {"result": 5}
    assert out["ms"] > 0
    out = demo.api("POST", "/api/call", json={"name": "count_down", "arguments": {"start": 2}}).json()
    assert out["result"]["content"][0]["text"] == "liftoff"
    assert [p["progress"] for p in out["progress"]] == [0, 1, 2]
    bad = demo.api("POST", "/api/call", json={"name": "count_down", "arguments": {"start": 999}}).json()
    assert bad["result"]["isError"] is True


def test_read_and_prompt_and_errors(demo: Running) -> None:
    out = demo.api("POST", "/api/read", json={"uri": "notes://groceries"}).json()
    assert out["result"]["contents"][0]["text"] == "eggs, milk, coffee"
    missing = demo.api("POST", "/api/read", json={"uri": "notes://nope"})
    assert missing.status_code == 502 and "error" in missing.json()
    prompt = demo.api("GET", "/api/prompts").json()["items"][0]
    args = {a["name"]: "x" for a in prompt.get("arguments") or [] if a.get("required")}
    got = demo.api("POST", "/api/prompt", json={"name": prompt["name"], "arguments": args}).json()
    assert got["result"]["messages"]
    assert demo.api("POST", "/api/call", json={"arguments": {}}).status_code == 400
    assert demo.api("POST", "/api/call", content=b"{not json").status_code == 400
    assert demo.api("GET", "/api/nothing").status_code == 404


def test_history_records_every_request_with_timing(demo: Running) -> None:
    demo.api("POST", "/api/call", json={"name": "add", "arguments": {"a": 20, "b": 22}})
    items = demo.api("GET", "/api/history").json()["items"]
    assert items[0]["method"] == "server/discover"
    last = items[-1]
    assert last["method"] == "tools/call" and last["params"] == {"name": "add", "arguments": {"a": 20, "b": 22}}
    assert last["result"]["structuredContent"] == {"result": 42} and last["ms"] > 0
    assert [e["id"] for e in items] == sorted(e["id"] for e in items)


def test_reconnect_gives_a_fresh_card(demo: Running) -> None:
    card = demo.api("POST", "/api/reconnect").json()
    assert card["connected"] is True and card["serverInfo"]["name"] == "mcpkit-demo"
    assert demo.api("POST", "/api/call", json={"name": "add", "arguments": {"a": 1, "b": 1}}).json()[
        "result"]["structuredContent"] == {"result": 2}


def test_a_server_that_fails_to_start_is_shown_not_fatal() -> None:
    with running_inspector("--timeout", "5", "--", sys.executable, "-c", "import sys; sys.exit(3)") as running:
        card = running.api("GET", "/api/card").json()
        assert card["connected"] is False and card["error"]
        assert running.api("GET", "/api/tools").status_code == 409


def test_usage_errors() -> None:
    out = subprocess.run([sys.executable, "-m", "mcpkit", "inspect", "--no-browser"], capture_output=True, text=True,
                         env=subprocess_env(), timeout=30)
    assert out.returncode == 2 and "TARGET" in out.stderr


def test_the_card_says_how_to_name_the_target_on_a_command_line(demo: Running) -> None:
    assert demo.api("GET", "/api/card").json()["cliTarget"].startswith("-- ")


def test_a_call_waiting_on_the_page_can_be_cancelled() -> None:
    from tests.helpers.paths import MRTR_SERVER

    with running_inspector(str(MRTR_SERVER)) as running, httpx.Client(timeout=30) as http:
        headers = {"X-Inspector-Token": running.token}
        with http.stream("GET", running.base + "/api/events", headers=headers) as events:
            lines = events.iter_lines()
            assert next(lines) == ": connected"
            import concurrent.futures

            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                call = pool.submit(running.api, "POST", "/api/call", json={"name": "greet", "callId": "c1"})
                for line in lines:  # the server's question reaches the page
                    if line.startswith("data:") and '"elicitation"' in line:
                        break
                assert running.api("POST", "/api/cancel", json={"callId": "c1"}).json() == {"cancelled": True}
                out = call.result(timeout=30).json()
        assert out["cancelled"] is True
        assert running.api("POST", "/api/cancel", json={"callId": "c1"}).status_code == 404
        assert running.api("GET", "/api/history").json()["items"][-1]["error"] == "cancelled"


def test_import_mcpkit_does_not_load_the_inspector() -> None:
    code = "import sys, mcpkit, mcpkit.cli; assert not any(m.startswith('mcpkit.inspect') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, env=subprocess_env(), timeout=30)


def test_completion(demo: Running) -> None:
    out = demo.api("POST", "/api/complete", json={"ref": {"type": "ref/resource", "uri": "notes://{name}"},
                                                  "argument": "name", "value": "gr"}).json()
    assert out["completion"]["values"] == ["groceries"]
    out = demo.api("POST", "/api/complete", json={"ref": {"type": "ref/prompt", "name": "summarize"},
                                                  "argument": "name", "value": ""}).json()
    assert "ideas" in out["completion"]["values"]


def test_the_wheel_ships_the_page(tmp_path) -> None:
    import zipfile

    from tests.helpers.paths import ROOT

    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("mcpkit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("index.html", "app.js", "style.css"):
        assert f"mcpkit/inspect/static/{name}" in names
