"""``mcpkit call``, ``list``, ``read``, ``prompt`` and ``scan`` against real servers: the demo over
stdio (``-- python examples/demo.py`` and ``examples/demo.py``), over HTTP (``mcpkit serve
--http``), npm ``@modelcontextprotocol/server-everything`` (a 2025-11-25 server), and servers
that fail."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import AUTH_SERVER, drain_pty, everything_argv, mcpkit, served
from tests.helpers.paths import DEMO, MISBEHAVING, TASKS_SERVER, TEST_SERVER

STDIO = ("--", sys.executable, str(DEMO))


# ====================================================================== call
def test_call_prints_the_result():
    proc = mcpkit("call", "add", "a=2", "b=3", *STDIO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "5\n"
    assert proc.stderr == ""


def test_call_json_prints_the_call_tool_result():
    proc = mcpkit("call", "--json", "add", "a=2", "b=3", *STDIO)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["structuredContent"]["result"] == 5
    assert result["content"][0]["type"] == "text"


def test_call_a_file_target_without_the_double_dash():
    proc = mcpkit("call", "add", "a=20", "b=22", DEMO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "42\n"


def test_call_with_structured_content_pretty_prints_it():
    proc = mcpkit("call", "convert_temperature", "value=212", *STDIO)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"value": 100.0, "unit": "celsius"}
    assert proc.stdout.startswith("{\n  ")


@pytest.mark.parametrize("args,message", [
    (["a=x", "b=3"], "add: invalid params (-32602): argument 'a' expects an integer, got 'x'"),
    (["a=1"], "add: invalid params (-32602): missing argument b (integer)"),
    (["a=1", "b=2", "c=3"], "add: invalid params (-32602): unknown argument 'c' (its arguments: a, b)"),
])
def test_bad_arguments_are_checked_first(args, message):
    proc = mcpkit("call", "add", *args, *STDIO)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 3, proc.stderr
    assert message in proc.stderr
    assert proc.stdout == ""


def test_enum_arguments_are_checked():
    proc = mcpkit("call", "convert_temperature", "value=1", "to=kelvin", *STDIO)
    assert proc.returncode != 0
    assert "'to' must be one of \"celsius\", \"fahrenheit\", got 'kelvin'" in proc.stderr


def test_string_arguments_keep_the_text(tmp_path):
    server = tmp_path / "echo.py"
    server.write_text("from mcpkit import Server\nserver = Server('echo', '1.0.0')\n\n"
                      "@server.tool()\ndef echo(text: str, times: int = 1) -> str:\n    return text * times\n")
    proc = mcpkit("call", "echo", "text=42", "times=2", server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "4242\n"


def test_args_json_for_nested_input(tmp_path):
    server = tmp_path / "nested.py"
    server.write_text("from mcpkit import Server\nserver = Server('nested', '1.0.0')\n\n"
                      "@server.tool()\ndef total(items: list[dict[str, int]], scale: int = 1) -> int:\n"
                      "    return scale * sum(i['n'] for i in items)\n")
    proc = mcpkit("call", "total", "--args", '{"items": [{"n": 1}, {"n": 2}]}', "scale=10", server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "30\n"
    bad = mcpkit("call", "total", "--args", "{not json", server)
    assert bad.returncode == 2 and "--args is not valid JSON" in bad.stderr


def test_unknown_tool_names_the_tools():
    proc = mcpkit("call", "nope", *STDIO)
    assert proc.returncode == 1
    assert "nope: no such tool (the server's tools: add, convert_temperature, count_down, save_note)" in proc.stderr


def test_is_error_result_exits_non_zero_in_one_line():
    proc = mcpkit("call", "count_down", "start=200", *STDIO)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == ["mcpkit call: count_down failed: start must be between 0 and 100"]
    as_json = mcpkit("call", "--json", "count_down", "start=200", *STDIO)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["isError"] is True


def test_json_rpc_error_exits_non_zero_in_one_line():
    proc = mcpkit("call", "--no-check", "anything", "--", sys.executable, str(MISBEHAVING), "erroring")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[0].endswith("the server answered with error -32603: always failing")


def test_call_against_serve_http_by_url():
    with served(DEMO) as srv:
        plain = mcpkit("call", "add", "a=2", "b=3", srv.url)
        as_json = mcpkit("call", "--json", "add", "a=2", "b=3", srv.url)
        bad = mcpkit("call", "add", "a=x", "b=3", srv.url)
    assert plain.returncode == 0 and plain.stdout == "5\n", plain.stderr
    assert json.loads(as_json.stdout)["structuredContent"]["result"] == 5
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) <= 3


def test_call_a_legacy_server():
    proc = mcpkit("call", "echo", "message=hi there", "--", *everything_argv())
    assert proc.returncode == 0, proc.stderr
    assert "hi there" in proc.stdout


def test_call_as_a_task():
    proc = mcpkit("call", "--task", "slow", "seconds=0.2", "label=render", TASKS_SERVER)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "render done after 0.2s\n"
    failed = mcpkit("call", "--task", "protocol_error", TASKS_SERVER)
    assert failed.returncode == 1 and "the job broke" in failed.stderr


def test_required_task_tool_without_task_says_what_is_missing():
    proc = mcpkit("call", "required_job", TASKS_SERVER)
    assert proc.returncode == 1
    assert "-32021" in proc.stderr


# ====================================================================== list
def test_list_tools_shows_arguments():
    proc = mcpkit("list", "tools", *STDIO)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "add(a: integer, b: integer)" in lines
    assert lines[lines.index("add(a: integer, b: integer)") + 1].strip() == "Add two integers."
    assert 'convert_temperature(value: number, to: "celsius"|"fahrenheit" = "celsius")' in lines
    assert "count_down(start: integer = 3)" in lines


def test_list_everything_by_default():
    proc = mcpkit("list", DEMO)
    assert proc.returncode == 0, proc.stderr
    for header in ("Tools (4):", "Resources (1):", "Resource templates (1):", "Prompts (1):"):
        assert header in proc.stdout
    assert "summarize(name, style?)" in proc.stdout
    assert "notes://{name}  [text/plain]" in proc.stdout


@pytest.mark.parametrize("kind,key,expected", [
    ("tools", "tools", {"add", "convert_temperature", "count_down", "save_note"}),
    ("resources", "resources", {"demo://clock"}),
    ("templates", "resourceTemplates", {"notes://{name}"}),
    ("prompts", "prompts", {"summarize"}),
])
def test_list_json_gives_the_full_lists(kind, key, expected):
    proc = mcpkit("list", "--json", kind, *STDIO)
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout)[key]
    assert {i.get("name") if key in ("tools", "prompts") else i.get("uri") or i.get("uriTemplate") for i in items} == expected


def test_list_every_page():
    proc = mcpkit("list", "--json", "tools", "--", sys.executable, str(TEST_SERVER))
    assert proc.returncode == 0, proc.stderr
    names = {t["name"] for t in json.loads(proc.stdout)["tools"]}
    assert {"sleep", "echo", "noisy", "multiline", "boom"} <= names


def test_list_a_legacy_server():
    proc = mcpkit("list", "tools", "--", *everything_argv())
    assert proc.returncode == 0, proc.stderr
    assert "echo(message: string)" in proc.stdout


# ====================================================================== read, prompt
def test_read_a_resource():
    proc = mcpkit("read", "notes://ideas", *STDIO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "write an MCP server in one file\n"
    as_json = mcpkit("read", "--json", "notes://ideas", *STDIO)
    assert json.loads(as_json.stdout)["contents"][0]["uri"] == "notes://ideas"


def test_read_a_missing_resource_fails_clearly():
    proc = mcpkit("read", "notes://nope", *STDIO)
    assert proc.returncode == 1
    assert "the server answered with error" in proc.stderr


def test_get_a_prompt():
    proc = mcpkit("prompt", "summarize", "name=ideas", "style=haiku", *STDIO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("[user]\nSummarize my note 'ideas' as haiku:")
    missing = mcpkit("prompt", "summarize", *STDIO)
    assert missing.returncode == 2 and "summarize: missing argument name" in missing.stderr
    as_json = mcpkit("prompt", "--json", "summarize", "name=ideas", *STDIO)
    assert json.loads(as_json.stdout)["messages"][0]["role"] == "user"


# ====================================================================== scan
def _config(tmp_path: Path, servers: dict) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_scan_json_reports_eras_counts_and_errors(tmp_path):
    with served(DEMO) as srv:
        config = _config(tmp_path, {
            "demo": {"command": sys.executable, "args": [str(DEMO)]},
            "everything": {"command": everything_argv()[0], "args": everything_argv()[1:]},
            "missing": {"command": "no-such-mcp-server-command-for-tests"},
            "demo-http": {"url": srv.url},
        })
        proc = mcpkit("scan", "--json", config)
    assert proc.returncode == 1  # one server failed
    rows = {r["name"]: r for r in json.loads(proc.stdout)["servers"]}
    assert [rows[n]["era"] for n in ("demo", "everything", "missing", "demo-http")] == ["modern", "legacy", None, "dual"]
    assert rows["demo"]["tools"] == 4 and rows["demo-http"]["tools"] == 4
    assert rows["everything"]["tools"] > 5
    assert rows["missing"]["error"] and "no-such-mcp-server-command-for-tests" in rows["missing"]["error"]
    assert all(rows[n]["error"] is None for n in ("demo", "everything", "demo-http"))
    assert rows["demo"]["transport"] == "stdio" and rows["demo-http"]["transport"] == "http"
    assert rows["demo"]["server"] == {"name": "mcpkit-demo", "version": "1.0.0"}
    assert rows["everything"]["versions"] == ["2025-11-25"]
    assert all(isinstance(rows[n]["latencyMs"], int) for n in ("demo", "everything", "demo-http"))


def test_scan_table(tmp_path):
    config = _config(tmp_path, {"demo": {"command": sys.executable, "args": [str(DEMO)]},
                                "broken": {"command": sys.executable, "args": [str(MISBEHAVING), "crash"]}})
    proc = mcpkit("scan", config)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["NAME", "TRANSPORT", "ERA", "VERSIONS", "SERVER", "TOOLS", "LATENCY", "AUTH"]
    demo_row = next(ln for ln in lines if ln.startswith("demo "))
    assert "modern" in demo_row and "mcpkit-demo 1.0.0" in demo_row  # over stdio: started once, no dual check
    assert any(ln.startswith("broken: ") and "closed" in ln for ln in lines)
    assert "crashing on purpose" in proc.stdout


def test_scan_all_ok_exits_zero_and_reads_vscode_shape(tmp_path):
    path = tmp_path / "vscode.json"
    path.write_text('{\n  // VS Code allows comments\n  "servers": {"demo": {"type": "stdio", "command": '
                    + json.dumps(sys.executable) + ', "args": [' + json.dumps(str(DEMO)) + ']},},\n}\n')
    proc = mcpkit("scan", "--json", path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["servers"][0]["era"] == "modern"


def test_scan_reports_auth(tmp_path):
    from tests.helpers.servers import ServerProcess

    srv = ServerProcess(lambda port: [sys.executable, str(AUTH_SERVER), str(port)])
    try:
        assert srv.wait_ready(), srv.output()
        config = _config(tmp_path, {"locked": {"url": srv.url},
                                    "unlocked": {"url": srv.url, "headers": {"Authorization": "Bearer s3cret"}}})
        proc = mcpkit("scan", "--json", config)
    finally:
        srv.stop()
    rows = {r["name"]: r for r in json.loads(proc.stdout)["servers"]}
    assert rows["locked"]["auth"] is True and "401" in rows["locked"]["error"]
    assert rows["unlocked"]["error"] is None and rows["unlocked"]["tools"] == 4


def test_scan_finds_the_host_configs(tmp_path):
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"from-cursor": {"command": sys.executable, "args": [str(DEMO)]}}}))
    (home / ".claude.json").write_text(json.dumps(
        {"projects": {"/some/project": {"mcpServers": {"from-claude-code": {"command": sys.executable,
                                                                              "args": [str(DEMO)]}}}}}))
    from tests.helpers.paths import subprocess_env

    env = subprocess_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), APPDATA=str(home / "AppData"))
    proc = mcpkit("scan", "--json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    names = {r["name"]: r for r in json.loads(proc.stdout)["servers"]}
    assert set(names) == {"from-cursor", "from-claude-code"}
    assert "Cursor" in names["from-cursor"]["source"] and "Claude Code" in names["from-claude-code"]["source"]
    empty = tmp_path / "empty_home"
    empty.mkdir()
    none = mcpkit("scan", cwd=empty, env=subprocess_env(HOME=str(empty), XDG_CONFIG_HOME=str(empty),
                                                        APPDATA=str(empty)))
    assert none.returncode == 1 and "no MCP host configs found" in none.stderr


# ====================================================================== elicitation on a terminal
def _on_a_terminal(argv: list[str], answers: list[tuple[str, str]], timeout: float = 30,
                   delay: float = 0.0) -> tuple[int, str, str]:
    """Run ``mcpkit ARGV`` with stdin and stderr on a pseudo-terminal; each (prompt, reply)
    waits for ``prompt`` on the terminal and types ``reply``. (status, stdout, terminal text)."""
    import os
    import pty
    import select
    import subprocess
    import time

    from tests.helpers.paths import ROOT, subprocess_env

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "mcpkit", *argv], stdin=slave, stderr=slave,
                            stdout=subprocess.PIPE, cwd=ROOT, env=subprocess_env(), text=True)
    os.close(slave)
    seen = ""
    try:
        deadline = time.monotonic() + timeout
        for prompt, reply in answers:
            while prompt not in seen:
                assert time.monotonic() < deadline, f"no {prompt!r} on the terminal:\n{seen}"
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        seen += os.read(master, 4096).decode(errors="replace")
                    except OSError:
                        break
            seen = seen[seen.index(prompt) + len(prompt):] if prompt in seen else seen
            time.sleep(delay)
            os.write(master, reply.encode() + b"\n")
        out, _ = proc.communicate(timeout=timeout)
        seen += drain_pty(master).decode(errors="replace")  # what it wrote after the last answer
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return proc.returncode, out, seen


def test_call_asks_the_person_at_the_terminal():
    code, out, _ = _on_a_terminal(["call", "ask_name", str(TASKS_SERVER)],
                                  [("name", "Ada"), ("send this answer?", "")])
    assert code == 0
    assert out == "Hello, Ada!\n"


def test_call_as_a_task_asks_the_person_too():
    code, out, _ = _on_a_terminal(["call", "--task", "ask_name", str(TASKS_SERVER)],
                                  [("name", "Grace"), ("send this answer?", "y")])
    assert code == 0
    assert out == "Hello, Grace!\n"


def test_declining_at_the_terminal():
    code, out, _ = _on_a_terminal(["call", "ask_name", str(TASKS_SERVER)],
                                  [("name", "x"), ("send this answer?", "decline")])
    assert code == 0
    assert out == "no name (decline)\n"


def test_time_at_the_terminal_does_not_count_against_the_timeout():
    code, out, _ = _on_a_terminal(["call", "--timeout", "3", "ask_name", str(TASKS_SERVER)],
                                  [("name", "Ada"), ("send this answer?", "")], delay=2.0)
    assert code == 0
    assert out == "Hello, Ada!\n"


def test_questions_asked_together_come_one_at_a_time():
    code, out, _ = _on_a_terminal(["call", "ask_twice", str(TASKS_SERVER)],
                                  [("name (", "Ada"), ("send this answer?", ""), ("ok (", "y"),
                                   ("send this answer?", "")])
    assert code == 0
    assert out == "Ada/True/Ada\n"  # synchronously (MRTR) the reused key "name" gets its first answer
