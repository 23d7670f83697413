"""``mcpkit serve``: it owns the transport (a module-level ``server.run()`` is not a second
server), finds ``FILE.py:attr`` and ``module:attr`` from the current directory (console script
too), says where it serves, stops cleanly on Ctrl-C and SIGTERM, puts every failure in one
line, takes ``--allowed-host``/``--allowed-origin``, and ``--reload`` restarts on changes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.helpers.cli import Served, console_script, mcpkit, served
from tests.helpers.messages import VERSION, body, headers_for, request
from tests.helpers.paths import DEMO, ROOT, SERVERS, TEST_SERVER, serve_argv, subprocess_env

RUNS_AT_IMPORT = SERVERS / "cli_runs_at_import.py"
TWO = SERVERS / "cli_two.py"


# ====================================================================== stdio
@pytest.mark.parametrize("spec", [str(TEST_SERVER), f"{TEST_SERVER}:server", "examples.demo:server", "examples.demo"])
def test_serve_runs_over_stdio(spawn, spec):
    peer = spawn(serve_argv(spec))
    result = peer.ask(request(1, "server/discover"))["result"]
    assert result["supportedVersions"] == [VERSION]
    peer.close_stdin()
    assert peer.proc.wait(timeout=3) == 0


def test_served_tool_print_goes_to_stderr(spawn):
    peer = spawn(serve_argv(TEST_SERVER))
    reply = peer.ask(request(1, "tools/call", name="noisy", arguments={"text": "x"}))
    assert reply["result"]["content"][0]["text"] == "X"
    assert "STRAY-PRINT x" in peer.wait_stderr("STRAY-FD1")
    assert peer.rest() == []


def test_serve_keeps_import_time_prints_off_stdout(spawn):
    peer = spawn(serve_argv(SERVERS / "banner.py"))
    peer.send(request(1, "tools/call", name="hello"))
    first = peer.lines.get(timeout=5)
    assert first is not None and first.startswith(b"{"), first


def test_module_level_run_is_not_a_second_server_on_stdio(spawn):
    t0 = time.monotonic()
    peer = spawn(serve_argv(RUNS_AT_IMPORT))
    reply = peer.ask(request(1, "tools/call", name="ping"))
    assert reply["result"]["content"][0]["text"] == "pong"
    assert time.monotonic() - t0 < 10
    note = peer.wait_stderr("calls server.run()")
    assert "mcpkit serve runs the server itself" in note


def test_module_level_run_under_serve_http_serves_http():
    with served(RUNS_AT_IMPORT) as srv:
        assert srv.url.endswith("/mcp")
        assert any("calls server.run() when imported" in line for line in srv.lines)
        proc = mcpkit("call", "ping", srv.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "pong\n"


def test_the_cli_calls_a_file_that_runs_itself_at_import():
    proc = mcpkit("call", "ping", RUNS_AT_IMPORT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "pong\n"


@pytest.mark.parametrize("spec,expected", [(f"{TWO}:b", "b"), ("tests/servers/cli_two.py:b", "b"),
                                           ("tests/servers/cli_two.py:build", "c"), ("tests.servers.cli_two:b", "b")])
def test_file_and_module_attr_forms(spec, expected):
    proc = mcpkit("call", "which", "--", sys.executable, "-m", "mcpkit", "serve", spec)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{expected}\n"


def test_file_attr_form_relative_to_the_current_directory(tmp_path):
    (tmp_path / "two.py").write_text(TWO.read_text())
    proc = mcpkit("call", "which", "--", sys.executable, "-m", "mcpkit", "serve", "two.py:b", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "b\n"


def test_module_attr_from_the_current_directory_with_the_console_script(tmp_path):
    (tmp_path / "weather.py").write_text(TWO.read_text())
    script = console_script(tmp_path)
    argv = [sys.executable, str(script), "serve", "weather:b"]
    proc = mcpkit("call", "which", "--", *argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "b\n"


@pytest.mark.parametrize("spec,message", [
    ("no/such/file.py", "no such file"),
    ("no_such_module_xyz:server", "no_such_module_xyz"),
    ("examples.demo:nothing", "nothing"),
    ("json", "exactly one"),
    (f"{TWO}", "found 2"),
])
def test_serve_with_a_bad_spec_fails_in_one_line(spec, message):
    proc = subprocess.run(serve_argv(spec), capture_output=True, text=True,
                          cwd=ROOT, env=subprocess_env(), timeout=20, input="")
    assert proc.returncode != 0
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stdout == ""


def test_syntax_error_is_one_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from mcpkit import Server\nserver = Server('x'\n")
    for argv in (["serve", bad], ["serve", "--http", bad]):
        proc = mcpkit(*argv)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith(f"mcpkit serve: {bad}:2: ") and "never closed" in lines[0]


def test_an_exception_at_import_is_one_line(tmp_path):
    boom = tmp_path / "boom.py"
    boom.write_text("from mcpkit import Server\nserver = Server('x')\nraise RuntimeError('no config file')\n")
    proc = mcpkit("serve", boom)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"mcpkit serve: {boom} (line 3): RuntimeError: no config file"]


@pytest.mark.parametrize("port,message", [("99999", "--port 99999 is out of range (0-65535)"),
                                          ("http", "--port 'http' is not a port number")])
def test_bad_port_is_one_line(port, message):
    proc = mcpkit("serve", "--http", "--port", port, DEMO)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"mcpkit serve: {message}"]


def test_port_in_use_is_one_line():
    with served(DEMO) as srv:
        proc = mcpkit("serve", "--http", "--port", str(srv.port), DEMO)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mcpkit serve: cannot listen on 127.0.0.1:{srv.port}: "), proc.stderr


# ====================================================================== http
def test_startup_line_names_the_url_and_the_eras():
    srv = Served(DEMO)
    try:
        m = srv.startup()
        assert m.group(0) == f"serving mcpkit-demo 1.0.0 on http://127.0.0.1:{srv.port}/mcp (modern + legacy, unprotected)"
    finally:
        srv.stop()


def test_startup_line_says_modern_only(tmp_path):
    (tmp_path / "modern.py").write_text("from mcpkit import Server\nserver = Server('m', '3.1.4', legacy=False)\n")
    with served("modern.py", cwd=tmp_path) as srv:
        assert srv.lines[-1].strip().endswith(f"on {srv.url} (modern only, unprotected)")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_end_cleanly_in_one_line(signum):
    srv = Served(DEMO)
    try:
        srv.startup()
        srv.signal(signum)
        code, rest = srv.finish()
    finally:
        srv.stop()
    assert code == 0
    assert rest.strip().splitlines() == [f"mcpkit serve: stopped ({signum.name})"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stdio_serve_stops_cleanly_on_a_signal(signum):
    proc = subprocess.Popen(serve_argv(DEMO), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env=subprocess_env(), text=True)
    try:
        proc.stdin.write(json.dumps(request(1, "tools/call", name="add", arguments={"a": 1, "b": 2})) + "\n")
        proc.stdin.flush()
        assert '"result"' in proc.stdout.readline()
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert err.strip().splitlines() == [f"mcpkit serve: stopped ({signum.name})"]


def test_call_over_http_by_url():
    with served(DEMO) as srv:
        plain = mcpkit("call", "add", "a=2", "b=3", srv.url)
        as_json = mcpkit("call", "--json", "add", "a=2", "b=3", srv.url)
    assert plain.returncode == 0 and plain.stdout == "5\n", plain.stderr
    assert json.loads(as_json.stdout)["structuredContent"]["result"] == 5


def _post_discover(url: str, **headers: str) -> httpx.Response:
    msg = body("server/discover")
    return httpx.post(url, json=msg, headers={**headers_for(msg), **headers}, timeout=10, trust_env=False)


def test_allowed_host_and_origin():
    with served(DEMO) as srv:
        assert _post_discover(srv.url, Host="mcp.example.test").status_code in (403, 421)
    with served("--allowed-host", "mcp.example.test", "--allowed-origin", "https://app.example.test", DEMO) as srv:
        ok = _post_discover(srv.url, Host="mcp.example.test", Origin="https://app.example.test")
        assert ok.status_code == 200, ok.text
        assert _post_discover(srv.url, Host="mcp.example.test", Origin="https://evil.example.test").status_code == 403


def test_reload_restarts_when_the_file_changes(tmp_path):
    server = tmp_path / "live.py"
    source = ("from mcpkit import Server\nserver = Server('live', '1.0.0')\n\n"
              "@server.tool()\ndef version() -> str:\n    return '{}'\n")
    server.write_text(source.format("one"))
    srv = Served("--reload", "live.py", cwd=tmp_path)
    try:
        srv.startup()
        first = mcpkit("call", "version", srv.url)
        assert first.stdout == "one\n", first.stderr
        time.sleep(0.1)
        server.write_text(source.format("two"))
        assert "live.py changed, restarting" in srv.read_line(20)
        srv.startup()
        second = mcpkit("call", "version", srv.url)
        assert second.stdout == "two\n", second.stderr
        srv.signal(signal.SIGTERM)
        code, rest = srv.finish()
        assert code == 0
        assert rest.strip().splitlines() == ["mcpkit serve: stopped (SIGTERM)"]
    finally:
        srv.stop()


def test_reload_needs_http():
    proc = mcpkit("serve", "--reload", DEMO)
    assert proc.returncode == 2
    assert "--reload needs --http" in proc.stderr
