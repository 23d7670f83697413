"""Terminal escape injection: what a server says reaches the terminal with its control
characters made visible (``\\x1b``, ``\\x9b``, ``\\u202e``), ``--json`` stays exact JSON, and
``--raw`` passes the bytes through. Every command runs as a real ``python -m mcpkit``
subprocess against a real stdio server (tests/servers/hostile_text.py) whose every word
carries window-title, clear-screen, OSC 52 clipboard, carriage-return and C1 sequences; the
401 case uses a real HTTP listener on 127.0.0.1."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.cli import drain_pty
from tests.helpers.paths import ROOT, SERVERS, subprocess_env

HOSTILE = SERVERS / "hostile_text.py"
EVIL = "A\x1b]0;pwned\x07B\x1b[2JC\x1b]52;c;cHduZWQ=\x07D\rE\x9b2JF\u202eG\x7fH\x08I"
#: EVIL as mcpkit shows it
SHOWN = r"A\x1b]0;pwned\x07B\x1b[2JC\x1b]52;c;cHduZWQ=\x07D\x0dE\x9b2JF\u202eG\x7fH\x08I"


def controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on (newline and tab aside)."""
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0
            or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069]


def run(*args: str | Path, timeout: float = 60) -> tuple[int, str, str]:
    """``python -m mcpkit ARGS`` with bytes kept as they are (no newline translation)."""
    proc = subprocess.run([sys.executable, "-m", "mcpkit", *map(str, args)], capture_output=True, cwd=str(ROOT),
                          env=subprocess_env(), timeout=timeout, input=b"")
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def assert_clean(*texts: str) -> None:
    for text in texts:
        assert not controls(text), repr(text)


@pytest.mark.parametrize("argv,where,expected", [
    (["list"], "out", "Describes A"),
    (["discover"], "out", "hostile" + SHOWN),
    (["discover"], "out", "Instructions A"),
    (["call", "shout"], "out", "result " + SHOWN),
    (["call", "fail"], "err", "tool error A"),
    (["call", "rpc_error"], "err", "rpc error " + SHOWN),
    (["call", "die"], "err", "stderr A"),
    (["read", "hostile://text"], "out", "resource " + SHOWN),
    (["prompt", "greet"], "out", "prompt " + SHOWN),
])
def test_server_text_reaches_the_terminal_escaped(argv, where, expected):
    code, out, err = run(*argv, HOSTILE)
    assert_clean(out, err)
    assert expected in (out if where == "out" else err), (out, err)
    assert r"\x1b]0;pwned\x07" in out + err


@pytest.mark.parametrize("argv,pick", [
    (["call", "--json", "shout"], lambda v: v["content"][0]["text"]),
    (["read", "--json", "hostile://text"], lambda v: v["contents"][0]["text"]),
    (["prompt", "--json", "greet"], lambda v: v["messages"][0]["content"]["text"]),
    (["list", "--json", "tools"], lambda v: v["tools"][0]["description"]),
    (["discover", "--json"], lambda v: v["discover"]["instructions"]),
])
def test_json_output_is_exact_and_has_no_raw_controls(argv, pick):
    code, out, err = run(*argv, HOSTILE)
    assert code == 0, err
    assert_clean(out, err)
    assert EVIL in pick(json.loads(out))


@pytest.mark.parametrize("argv,expected", [
    (["call", "--raw", "shout"], "result " + EVIL + "\n"),
    (["read", "--raw", "hostile://text"], "resource " + EVIL + "\n"),
])
def test_raw_passes_the_bytes_through(argv, expected):
    code, out, err = run(*argv, HOSTILE)
    assert code == 0, err
    assert out == expected


def test_raw_on_a_failure_passes_the_servers_stderr_through():
    code, out, err = run("call", "--raw", "rpc_error", HOSTILE)
    assert "rpc error " + EVIL in err


def test_scan_rows_and_errors_are_escaped(tmp_path):
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "name" + EVIL: {"command": sys.executable, "args": ["-m", "mcpkit", "serve", str(HOSTILE)]},
        "broken": {"command": sys.executable, "args": ["-c", f"import sys; sys.stderr.write({EVIL!r}); sys.exit(3)"]},
    }}))
    code, out, err = run("scan", config)
    assert_clean(out, err)
    assert "name" + SHOWN in out and "hostile" + r"A\x1b]0;pwned\x07" in out
    code, out, err = run("scan", "--json", config)
    assert_clean(out, err)
    rows = {r["name"]: r for r in json.loads(out)["servers"]}
    assert rows["name" + EVIL]["server"]["name"] == "hostile" + EVIL


class _Http401:
    """A real HTTP listener on 127.0.0.1 answering every request 401 with a hostile
    ``WWW-Authenticate`` error_description (what an authorization server can say)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/mcp"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        evil = "A\x1b]0;pwned\x07B\x1b[2JC\x9b2J".encode("latin-1")
        body = b'{"error": "unauthorized"}'
        answer = (b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  b'WWW-Authenticate: Bearer error="invalid_token", error_description="' + evil + b'"\r\n'
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(5)
                try:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    conn.sendall(answer)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def test_an_error_description_in_a_401_is_escaped():
    server = _Http401()
    try:
        code, out, err = run("call", "--no-login", "--bearer", "x", "tool", server.url)
    finally:
        server.close()
    assert code == 1
    assert_clean(out, err)
    assert r"A\x1b]0;pwned\x07B\x1b[2JC\x9b2J" in err


def _on_a_terminal(argv: list[str], answers: list[tuple[str, str]], timeout: float = 30) -> tuple[int, str, str]:
    """``mcpkit ARGV`` with stdin and stderr on a pseudo-terminal (so progress and questions
    are shown); each (prompt, reply) waits for ``prompt`` and types ``reply``.
    (status, stdout, the terminal's text with mcpkit's own line clearing and the terminal's
    CRLF turned back into plain newlines)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", *argv], stdin=slave, stderr=slave,
                            stdout=subprocess.PIPE, cwd=ROOT, env=subprocess_env(), start_new_session=True)
    os.close(slave)
    seen = b""
    pending = list(answers)
    try:
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            if select.select([master], [], [], 0.1)[0]:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
            if pending and pending[0][0].encode() in seen.rsplit(b"\n", 1)[-1]:
                os.write(master, pending.pop(0)[1].encode() + b"\n")
        seen += drain_pty(master)
        out = proc.stdout.read() if proc.stdout else b""
        proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = seen.decode("utf-8", "replace").replace("\r\x1b[K", "").replace("\r\n", "\n")
    return proc.returncode, out.decode("utf-8"), text


def test_progress_messages_on_a_terminal_are_escaped():
    code, out, term = _on_a_terminal(["call", "progress", str(HOSTILE)], [])
    assert code == 0, term
    assert out == "done\n"
    assert_clean(term)
    assert "progress A" in term and r"\x1b]0;pwned\x07" in term


def test_an_elicitation_question_and_its_field_title_are_escaped():
    code, out, term = _on_a_terminal(["call", "ask", str(HOSTILE)],
                                     [("(string", "yes"), ("send this answer?", "")])
    assert code == 0, term
    assert out == "got yes\n"
    assert_clean(term, out)
    assert "The server asks: question " + SHOWN in term
    assert "answer - field A" in term


def test_inspect_console_lines_are_escaped():
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "inspect", "--no-browser", "--port", "0", str(HOSTILE)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=subprocess_env(),
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().decode("utf-8")
    finally:
        proc.kill()
        proc.wait(10)
    assert "connected to hostile" in first
    assert_clean(first.rstrip("\n"))
    assert "hostile" + SHOWN in first


class _RefusingAuthorizationServer:
    """A real HTTP server on 127.0.0.1: an MCP endpoint that wants OAuth, its protected
    resource metadata, an authorization server's metadata, and a registration endpoint that
    refuses with a hostile ``error_description`` (what ``mcpkit login`` prints)."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, status: int, value: dict, headers: dict[str, str] | None = None) -> None:
                body = json.dumps(value).encode()
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _route(self) -> None:
                base = outer.base
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                if self.path.startswith("/mcp"):
                    self._json(401, {"error": "unauthorized"}, {"WWW-Authenticate": f'Bearer resource_metadata='
                                                                f'"{base}/.well-known/oauth-protected-resource/mcp"'})
                elif self.path.startswith("/.well-known/oauth-protected-resource"):
                    self._json(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
                elif self.path.startswith(("/.well-known/oauth-authorization-server", "/.well-known/openid-config")):
                    self._json(200, {"issuer": base, "authorization_endpoint": f"{base}/authorize",
                                     "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
                                     "response_types_supported": ["code"],
                                     "code_challenge_methods_supported": ["S256"]})
                elif self.path.startswith("/register"):
                    self._json(400, {"error": "invalid_client_metadata", "error_description": "AS says " + EVIL})
                else:
                    self._json(404, {"error": "not found"})

            do_GET = do_POST = _route

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)


def test_login_prints_the_authorization_servers_error_description_escaped(tmp_path):
    server = _RefusingAuthorizationServer()
    try:
        store = tmp_path / "oauth.json"
        code, out, err = run("login", "--no-browser", "--token-store", store, server.base + "/mcp")
        raw_code, raw_out, raw_err = run("login", "--raw", "--no-browser", "--token-store", store, server.base + "/mcp")
    finally:
        server.close()
    assert code == 1, err
    assert_clean(out, err)
    assert r"AS says A\x1b]0;pwned\x07B\x1b[2JC\x1b]52;c;cHduZWQ=\x07D" in err
    assert "\x1b]0;pwned\x07" in raw_err
