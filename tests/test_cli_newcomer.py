"""The first hour with the ``mcpkit`` command (issue 23's friction list): every failure a new
user met is one clear line, every option that cannot apply says so, and the output shows each
thing once. Real subprocesses, real servers on 127.0.0.1, real pseudo-terminals."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.cli import drain_pty, mcpkit
from tests.helpers.paths import DEMO, ROOT, subprocess_env
from tests.helpers.servers import free_port, mcpkit_serve_argv, running_server


def on_a_terminal(argv: list[str], *, wait_for: str | None = None,
                  then: str | int | Callable[[subprocess.Popen[str]], None] | None = None,
                  timeout: float = 30, cwd: Path = ROOT) -> tuple[int, str, str, float]:
    """``mcpkit ARGV`` with stdin and stderr on a pseudo-terminal. With ``wait_for``, once that
    text is on the terminal ``then`` is typed (a str), sent as a signal (an int) or called
    with the process.
    (status, stdout, terminal text, seconds from ``then`` (or the start) to the exit)."""
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", *argv], stdin=slave, stderr=slave,
                            stdout=subprocess.PIPE, cwd=cwd, env=subprocess_env(), text=True)
    os.close(slave)
    seen = b""
    t0 = time.monotonic()
    try:
        if wait_for is not None:
            deadline = t0 + timeout
            while wait_for.encode() not in seen:
                assert time.monotonic() < deadline and proc.poll() is None, f"no {wait_for!r}:\n{seen.decode()}"
                if select.select([master], [], [], 0.2)[0]:
                    seen += os.read(master, 4096)
            t0 = time.monotonic()
            if isinstance(then, str):
                os.write(master, then.encode())
            elif isinstance(then, int):
                proc.send_signal(then)
            elif then is not None:
                then(proc)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        elapsed = time.monotonic() - t0
        seen += drain_pty(master)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return proc.returncode, out, seen.decode(errors="replace").replace("\r\n", "\n"), elapsed


def one_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


# ====================================================================== 1. OAuth failures on a terminal
def test_a_401_whose_authorization_server_is_down_is_one_line_on_a_terminal(tmp_path):
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = subprocess_env(EXAMPLE_TOKENS="s3cret", AUTHORIZATION_SERVER=down)
    argv = lambda port: [sys.executable, "-m", "uvicorn", "examples.static_token_server:app", "--host", "127.0.0.1",
                         "--port", str(port), "--log-level", "warning"]
    with running_server(argv, env=env) as url:
        for command in (["list", "tools"], ["discover"], ["call", "add", "a=1", "b=2"], ["read", "notes://x"]):
            code, out, term, _ = on_a_terminal([*command, "--no-browser", "--token-store", str(tmp_path / "t.json"),
                                                url])
            line = one_line(term)
            assert code == 1 and out == ""
            assert "authorization failed" in line and down in line, line


# ====================================================================== 2. login options that cannot work
@pytest.mark.parametrize("argv, said", [
    (["login", "--client-credentials", "http://127.0.0.1:9/mcp"], "--client-credentials needs --client-id"),
    (["login", "--client-credentials", "--client-id", "c", "--private-key", "no-such.pem", "http://127.0.0.1:9/mcp"],
     "--private-key no-such.pem: No such file or directory"),
    (["call", "add", "--client-credentials", "--client-id", "c", "--private-key", "no-such.pem",
      "http://127.0.0.1:9/mcp"], "--private-key no-such.pem: No such file or directory"),
    (["list", "--client-credentials", "http://127.0.0.1:9/mcp"], "--client-credentials needs --client-id"),
    (["login", "--bearer", "tok", "http://127.0.0.1:9/mcp"], "login gets a token, so it takes no --bearer"),
])
def test_login_options_that_cannot_work_are_one_line(tmp_path, argv, said):
    proc = mcpkit(*argv, cwd=tmp_path)
    assert proc.returncode == 2
    assert said in one_line(proc.stderr)


# ====================================================================== 3. mcpkit's own resource server
@pytest.fixture(scope="module")
def protected_url():
    down = f"http://127.0.0.1:{free_port()}"
    argv = lambda port: [sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port), "--auth-issuer", down,
                         str(DEMO)]
    with running_server(argv) as url:
        yield url


def test_a_401_from_mcpkits_resource_server_gives_the_reason_and_the_hint(protected_url):
    line = one_line(mcpkit("list", "tools", protected_url).stderr)
    assert "requires authorization (HTTP 401, Unauthorized: an access token is required)" in line
    assert "pass --bearer TOKEN" in line and "mcpkit login URL" in line
    assert "answered the probe" not in line


def test_a_refused_token_gives_the_servers_description(protected_url):
    line = one_line(mcpkit("call", "add", "a=1", "b=2", "--bearer", "junk", protected_url).stderr)
    assert "refused the credentials given (HTTP 401, the access token is not a signed JWT)" in line


def test_login_to_a_server_that_needs_none_says_so(tmp_path):
    with running_server(mcpkit_serve_argv(DEMO)) as url:
        proc = mcpkit("login", "--no-browser", "--token-store", tmp_path / "t.json", url)
    line = one_line(proc.stderr)
    assert proc.returncode == 1
    assert f"{url} answers without authorization: there is nothing to log in to" in line


# ====================================================================== 4. a result printed once
THIRD_PARTY_RESULTS = '''\
from mcpkit import Server, types as t

server = Server("results", "1.0.0")

def _result(text, structured):
    return t.CallToolResult(content=[t.TextContent(text=text)], structuredContent=structured)

@server.tool()
def answer() -> t.CallToolResult:
    return _result("42", {"result": 42})          # FastMCP's int

@server.tool()
def read_file() -> t.CallToolResult:
    return _result("line one\\nline two", {"content": "line one\\nline two"})   # server-filesystem

@server.tool()
def greeting() -> t.CallToolResult:
    return _result("hello", {"result": "hello"})

@server.tool()
def point() -> t.CallToolResult:
    return _result('{"x": 1, "y": 2}', {"x": 1, "y": 2})   # the text is the serialisation

@server.tool()
def weather() -> t.CallToolResult:
    return _result("sunny in Paris", {"city": "Paris", "sky": "sunny"})   # each says something
'''


@pytest.mark.parametrize("tool, printed", [
    ("answer", "42\n"),
    ("read_file", "line one\nline two\n"),
    ("greeting", "hello\n"),
    ("point", '{\n  "x": 1,\n  "y": 2\n}\n'),
    ("weather", 'sunny in Paris\n{\n  "city": "Paris",\n  "sky": "sunny"\n}\n'),
])
def test_call_prints_structured_content_only_when_it_adds_something(tmp_path, tool, printed):
    server = tmp_path / "results.py"
    server.write_text(THIRD_PARTY_RESULTS)
    proc = mcpkit("call", tool, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == printed


# ====================================================================== 13. help, stderr, legacy JSON
@pytest.mark.parametrize("command", ["call", "list", "read", "prompt", "discover", "inspect", "serve", "login"])
def test_help_epilogs_keep_one_example_per_line(command):
    proc = mcpkit(command, "--help")
    assert proc.returncode == 0, proc.stderr
    tail = proc.stdout[proc.stdout.rindex("\nexample") + 1:].splitlines()
    assert tail[0] in ("example:", "examples:")
    assert all(line.startswith(f"  mcpkit {command}") for line in tail[1:]), proc.stdout


def test_logout_and_read_explain_themselves():
    logout = mcpkit("logout", "--help").stdout
    assert "Forget the tokens" in logout
    read = mcpkit("read", "--help").stdout
    assert "the resource's URI" in read


DIES = "import sys\nprint('KeyError: API_KEY is not set', file=sys.stderr)\nsys.exit(3)\n"


def test_inspect_shows_a_failing_servers_stderr(tmp_path):
    server = tmp_path / "dies.py"
    server.write_text(DIES)
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "inspect", "--no-browser", "--port", "0", "--timeout", "5",
                             "--", sys.executable, str(server)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, cwd=ROOT, env=subprocess_env())
    try:
        lines = []
        assert proc.stderr is not None
        while not any("API_KEY" in ln for ln in lines):
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=15)
    text = "".join(lines)
    assert "the server closed its output" in text
    assert "the server's stderr:\n  KeyError: API_KEY is not set" in text


def test_scan_shows_a_failing_servers_stderr_as_discover_does(tmp_path):
    server = tmp_path / "dies.py"
    server.write_text(DIES)
    config = tmp_path / "hosts.json"
    config.write_text(json.dumps({"mcpServers": {"dies": {"command": sys.executable, "args": [str(server)]}}}))
    proc = mcpkit("scan", config, cwd=tmp_path)
    assert proc.returncode == 1
    assert "dies: the server closed its output" in proc.stdout
    assert "\n  the server's stderr:\n    KeyError: API_KEY is not set" \
        in proc.stdout
    as_json = json.loads(mcpkit("scan", "--json", config, cwd=tmp_path).stdout)["servers"][0]
    assert as_json["stderr"] == ["KeyError: API_KEY is not set"]


def test_json_of_a_legacy_server_has_only_what_it_sent():
    from tests.helpers.cli import everything_argv

    everything = everything_argv()
    call = json.loads(mcpkit("call", "--json", "echo", "message=hi", "--", *everything).stdout)
    assert call == {"content": [{"type": "text", "text": "Echo: hi"}]}
    read = mcpkit("read", "--json", "demo://resource/static/document/architecture.md", "--", *everything)
    assert read.returncode == 0, read.stderr
    assert not {"resultType", "ttlMs", "cacheScope"} & set(json.loads(read.stdout)), read.stdout


# ====================================================================== 16. options that cannot apply
@pytest.mark.parametrize("options, said", [
    (["--port", "9000"], "--port is for Streamable HTTP: add --http"),
    (["--port", "9000", "--workers", "2"], "--port and --workers are for Streamable HTTP: add --http"),
    (["--auth-issuer", "https://auth.example"], "--auth-issuer is for Streamable HTTP: add --http"),
])
def test_http_options_without_http_are_refused(options, said):
    proc = mcpkit("serve", *options, DEMO)
    assert proc.returncode == 2
    assert said in one_line(proc.stderr)


def test_a_path_without_its_slash_is_served_at_slash_path():
    from tests.helpers.cli import served

    with served("--path", "mcp", DEMO) as srv:
        assert srv.url.endswith(f":{srv.port}/mcp"), srv.url
        proc = mcpkit("call", "add", "a=1", "b=2", srv.url)
    assert proc.returncode == 0 and proc.stdout == "3\n", proc.stderr


def test_env_for_a_url_is_refused():
    proc = mcpkit("list", "-e", "A=1", "http://127.0.0.1:9/mcp")
    assert proc.returncode == 2
    assert "-e KEY=VAL sets a stdio server's environment; an http(s) URL takes --header K:V" in one_line(proc.stderr)


WITHOUT = ("import sys\n"
           "for name in sys.argv[1].split(','):\n"
           "    sys.modules[name] = None\n"
           "from mcpkit.cli import main\n"
           "sys.exit(main(sys.argv[2:]))\n")


@pytest.mark.parametrize("missing, argv, said", [
    ("redis", ["serve", "--http", "--port", "0", "--workers", "2", "--redis", "redis://127.0.0.1:9", str(DEMO)],
     "--redis needs the redis extra: pip install 'mcpkit[redis]' (redis is not installed)"),
    ("httpx", ["login", "http://127.0.0.1:9/mcp"],
     "OAuth needs the oauth extra: pip install 'mcpkit[oauth]' (httpx is not installed)"),
])
def test_a_missing_extra_is_one_line(tmp_path, missing, argv, said):
    proc = subprocess.run([sys.executable, "-c", WITHOUT, missing, *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=subprocess_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert said in one_line(proc.stderr)


def test_server_run_knows_the_official_sdks_name_and_lists_the_choices(tmp_path):
    from mcpkit import Server

    with pytest.raises(ValueError, match="unknown transport 'sse': choose 'stdio' or 'http'"):
        Server("x").run("sse")  # type: ignore[arg-type]
    server = tmp_path / "runs.py"
    server.write_text("import sys\nfrom mcpkit import Server\nserver = Server('runs', '1.0.0')\n\n"
                      "@server.tool()\ndef ping() -> str:\n    return 'pong'\n\n"
                      "server.run('streamable-http', port=int(sys.argv[1]))\n")
    with running_server(lambda port: [sys.executable, str(server), str(port)]) as url:
        proc = mcpkit("call", "ping", url)
    assert proc.returncode == 0 and proc.stdout == "pong\n", proc.stderr


# ====================================================================== 8. --timeout includes shutting down
BUSY = ("import time\nfrom mcpkit import Server\nserver = Server('busy', '1.0.0')\n\n"
        "@server.tool()\ndef spin() -> str:\n    time.sleep(60)   # the event loop is blocked\n    return 'done'\n")


def test_timeout_includes_stopping_a_busy_server(tmp_path):
    server = tmp_path / "busy.py"
    server.write_text(BUSY)
    t0 = time.monotonic()
    proc = mcpkit("call", "--timeout", "2", "spin", server)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 1
    assert "no answer within 2 s" in one_line(proc.stderr)  # and not "mcpkit serve: stopped (SIGTERM)"
    assert elapsed < 3.5, elapsed


# ====================================================================== 9. output that is not JSON-RPC
@pytest.mark.parametrize("command, default", [(["discover"], 10), (["call", "anything"], 30)])
def test_a_server_writing_garbage_fails_fast(command, default):
    from tests.helpers.cli import GARBAGE

    t0 = time.monotonic()
    proc = mcpkit(*command, "--", sys.executable, GARBAGE)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 1
    assert "the server writes to stdout what is not JSON-RPC ('starting weather server v0.1')" in proc.stderr
    assert "logs belong on stderr" in proc.stderr
    assert elapsed < 4, elapsed  # the default time limit is {default} s


def test_a_banner_before_the_answers_is_tolerated(tmp_path):
    server = tmp_path / "banner.py"
    server.write_text("import sys\nprint('weather server v0.1 starting', flush=True)\n"
                      "sys.argv[1:] = ['serve', sys.argv[0].replace('banner.py', 'demo.py')]\n"
                      "from mcpkit.cli import main\nsys.exit(main())\n")
    (tmp_path / "demo.py").write_text(DEMO.read_text())
    proc = mcpkit("call", "add", "a=1", "b=2", "--", sys.executable, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "3\n"


# ====================================================================== 12. a folder named mcpkit here
def test_a_file_target_works_next_to_a_folder_named_mcpkit(tmp_path):
    from tests.helpers.cli import console_script

    (tmp_path / "mcpkit").mkdir()
    (tmp_path / "mcpkit" / "__init__.py").write_text("raise ImportError('this is not mcpkit')\n")
    (tmp_path / "demo.py").write_text(DEMO.read_text())
    launcher = console_script(tmp_path)
    proc = subprocess.run([sys.executable, str(launcher), "call", "add", "a=2", "b=3", "demo.py"], capture_output=True,
                          text=True, cwd=tmp_path, env=subprocess_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "5\n"


# ====================================================================== 5. Ctrl-C at a question
def test_ctrl_c_at_an_elicitation_prompt_stops_at_once():
    from tests.helpers.paths import TASKS_SERVER

    code, out, term, elapsed = on_a_terminal(["call", "ask_name", str(TASKS_SERVER)], wait_for="(string)",
                                             then=signal.SIGINT)
    assert code == 130, term
    assert "mcpkit call: interrupted" in term
    assert out == ""
    assert elapsed < 3, elapsed  # not "until Enter is pressed"


def _sigint_to_another_thread(proc: subprocess.Popen[str]) -> None:
    """SIGINT aimed at one of the process's threads that is not the main one: what the kernel
    may do with a Ctrl-C (asyncio's child watcher keeps a thread per server process)."""
    import ctypes

    others = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
    if not others:
        pytest.skip("the CLI runs no second thread here")
    tgkill = ctypes.CDLL(None, use_errno=True).tgkill
    assert tgkill(proc.pid, others[0], signal.SIGINT) == 0, ctypes.get_errno()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tgkill and /proc are Linux's")
def test_ctrl_c_that_lands_on_another_thread_still_stops_at_once():
    """The signal's handler runs on the main thread, which sits in the selector waiting for the
    answer: only a wakeup fd gets it out (without one this hung until Enter was pressed)."""
    from tests.helpers.paths import TASKS_SERVER

    code, out, term, elapsed = on_a_terminal(["call", "ask_name", str(TASKS_SERVER)], wait_for="(string)",
                                             then=_sigint_to_another_thread, timeout=15)
    assert code == 130, term
    assert "mcpkit call: interrupted" in term
    assert out == ""
    assert elapsed < 3, elapsed


def test_answers_typed_at_the_terminal_still_arrive():
    from tests.helpers.paths import TASKS_SERVER

    code, out, term, _ = on_a_terminal(["call", "ask_name", str(TASKS_SERVER)], wait_for="name", then="Ada\n\n")
    assert code == 0, term
    assert out == "Hello, Ada!\n"


def test_a_titled_enum_is_asked_as_numbered_choices():
    from mcpkit.cli._ask import titled_choices

    one_of = {"type": "string", "oneOf": [{"const": "a", "title": "Apple"}, {"const": "b"}]}
    assert titled_choices(one_of) == [("a", "Apple"), ("b", "b")]
    assert titled_choices({"type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]}) == [("x", "Ex"), ("y", "Why")]
    assert titled_choices({"type": "string", "enum": ["x"]}) == []
    assert titled_choices({"anyOf": [{"type": "string"}, {"type": "null"}]}) == []


# ====================================================================== 16. a stdio server started once
COUNTED = """import os, runpy, sys
with open(sys.argv[1], "a") as f:
    f.write(f"{os.getpid()}\\n")
if sys.argv[2] == "modern":
    from mcpkit import Server
    server = Server("counted", "1.0.0")

    @server.tool()
    def echo(message: str) -> str:
        return f"Echo: {message}"

    server.run()
else:
    sys.argv = [sys.argv[0], "legacy-32601", os.devnull]
    runpy.run_path(ERA_STDIO, run_name="__main__")
"""


def _counted(tmp_path: Path, era: str) -> tuple[list[str], Path]:
    from tests.helpers.paths import ERA_STDIO

    server = tmp_path / "counted.py"
    server.write_text(f"ERA_STDIO = {str(ERA_STDIO)!r}\n" + COUNTED)
    starts = tmp_path / f"starts-{era}"
    return [sys.executable, str(server), str(starts), era], starts


def _starts(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("command", [["discover"], ["discover", "--json"], ["list", "tools"],
                                     ["call", "echo", "message=hi"]])
def test_a_stdio_server_is_started_once(tmp_path, era, command):
    argv, starts = _counted(tmp_path, era)
    proc = mcpkit(*command, "--", *argv)
    assert proc.returncode == 0, proc.stderr
    assert _starts(starts) == 1, proc.stdout
    if command[0] == "discover":
        assert ("legacy" if era == "legacy" else "modern") in proc.stdout


def test_both_eras_starts_a_modern_stdio_server_again_to_find_it_dual(tmp_path):
    argv, starts = _counted(tmp_path, "modern")
    proc = mcpkit("discover", "--both-eras", "--", *argv)
    assert proc.returncode == 0, proc.stderr
    assert "Era:           dual" in proc.stdout and _starts(starts) == 2


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_inspect_starts_a_stdio_server_once(tmp_path, era):
    argv, starts = _counted(tmp_path, era)
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "inspect", "--no-browser", "--port", "0", "--", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            cwd=ROOT, env=subprocess_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"({era}) at" in line, line
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=15)
    assert _starts(starts) == 1
