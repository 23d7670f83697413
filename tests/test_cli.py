"""The ``mcpkit`` command, general and ``discover``: the card, ``--json`` with the lists and the
era verdict, ``-v``, a ``--timeout`` that bounds the whole probe, TARGET forms, and every
failure as a clear message with a non-zero exit. Real subprocesses throughout."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from mcpkit.protocol import types as t
from tests.helpers.cli import AUTH_SERVER, GARBAGE, everything_argv, mcpkit, mcpkit_without_http_extra, served
from tests.helpers.messages import VERSION, request
from tests.helpers.paths import DEMO, MISBEHAVING, ROOT, TEST_SERVER, serve_argv, subprocess_env


def discover(*cmd: str | Path, opts: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return mcpkit("discover", *opts, "--", sys.executable, *cmd)


# ====================================================================== the command itself
def test_version_flag():
    proc = mcpkit("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("mcpkit ")


def test_help_lists_every_command_and_the_target_forms():
    proc = mcpkit("--help")
    assert proc.returncode == 0
    for cmd in ("call", "list", "read", "prompt", "discover", "scan", "serve"):
        assert cmd in proc.stdout
    assert "-- COMMAND" in proc.stdout and "mcpkit[http]" in proc.stdout


def test_unknown_command_is_one_usage_error():
    proc = mcpkit("frobnicate")
    assert proc.returncode == 2
    assert "unknown command 'frobnicate'" in proc.stderr and "call" in proc.stderr


@pytest.mark.parametrize("argv", [["--help"], ["call", "--help"], ["serve", "--help"], ["discover", "--help"]])
def test_help_imports_neither_httpx_nor_uvicorn(argv):
    code = ("import sys\nfrom mcpkit.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', sorted(m for m in ('httpx', 'uvicorn', 'mcpkit.client') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                          env=subprocess_env(), timeout=30)
    assert "LOADED []" in proc.stdout, proc.stdout + proc.stderr


def test_import_mcpkit_stays_cheap():
    heavy = "('httpx', 'uvicorn', 'mcpkit.cli', 'mcpkit.client', 'asyncio')"
    code = f"import sys, mcpkit\nprint(sorted(m for m in {heavy} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), timeout=30)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


# ====================================================================== discover: the card
def test_card_for_the_demo():
    proc = discover(DEMO)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert "mcpkit-demo" in lines[0] and "1.0.0" in lines[0] and "mcpkit demo" in lines[0]
    assert VERSION in out
    assert "Era:           modern (2026-07-28, stateless)" in out  # stdio: started once, no dual check
    for cap in ("tools", "resources", "prompts", "completions"):
        assert cap in out
    assert "Unit conversions and a tiny notes store." in out
    expected_rows = {
        "convert_temperature": "Convert a temperature between Celsius and Fahrenheit.",
        "add": "Add two integers.",
        "count_down": "Count down to zero, reporting progress on the way.",
        "demo://clock": "The server's current UTC time.",
        "notes://{name}": "A note from the notes store, by name.",
        "summarize": "Ask the model to summarize one note.",
    }
    for ident, desc in expected_rows.items():
        assert any(row.split() and row.split()[0] == ident and row.rstrip().endswith(desc) for row in lines), ident
    assert "ttlMs=60000" in out and "public" in out


def test_card_lists_every_page_and_only_first_description_lines():
    proc = discover(TEST_SERVER)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("sleep", "echo", "noisy", "boom", "refuse", "whoami", "multiline", "greet", "test://broken"):
        assert any(row.split() and row.split()[0] == name for row in out.splitlines()), name
    assert "First line of a long description." in out
    assert "Second paragraph" not in out
    assert "A server for tests." in out
    assert "mcpkit-testserver" in out and "9.9.9" in out


def test_card_leaves_out_empty_sections(tmp_path):
    server = tmp_path / "only_tools.py"
    server.write_text("from mcpkit import Server\nserver = Server('only-tools', '0.1.0')\n\n"
                      "@server.tool()\ndef hello() -> str:\n    return 'hi'\n")
    proc = mcpkit("discover", server)
    assert proc.returncode == 0, proc.stderr
    assert "Tools (1):" in proc.stdout
    assert "Resources" not in proc.stdout and "Prompts" not in proc.stdout


def test_verbose_card_shows_tool_arguments():
    proc = discover(DEMO, opts=("-v",))
    assert proc.returncode == 0, proc.stderr
    assert "add(a: integer, b: integer)" in proc.stdout
    assert 'convert_temperature(value: number, to: "celsius"|"fahrenheit" = "celsius")' in proc.stdout
    assert "count_down(start: integer = 3)" in proc.stdout


def test_card_from_a_served_file():
    proc = mcpkit("discover", "--", *serve_argv(DEMO))
    assert proc.returncode == 0, proc.stderr
    assert "mcpkit-demo" in proc.stdout


def test_discover_a_file_without_the_double_dash(tmp_path):
    # The file exists: it is a server file to run, not a command named "weather.py".
    weather = tmp_path / "weather.py"
    weather.write_text("from mcpkit import Server\nserver = Server('weather', '0.3.0')\n\n"
                       "@server.tool()\ndef forecast(city: str) -> str:\n    '''Tomorrow's weather.'''\n"
                       "    return 'sunny'\n")
    proc = mcpkit("discover", "weather.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("weather  v0.3.0")
    assert "forecast" in proc.stdout


def test_discover_a_plain_script_file_runs_it_with_this_python():
    # Not an mcpkit server module: it is run as `python FILE.py` (and what it wrote is shown).
    proc = mcpkit("discover", "--timeout", "2", GARBAGE)
    assert proc.returncode == 1
    assert "starting weather server v0.1" in proc.stderr


# ====================================================================== discover --json
def test_json_has_the_discover_result_the_era_and_the_lists(demo):
    proc = discover(DEMO, opts=("--json", "--both-eras"))
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    assert set(printed) == {"era", "discover", "tools", "resources", "resourceTemplates", "prompts"}
    assert printed["era"] == "dual"  # --both-eras: a second, legacy-only start answered initialize
    msgspec.convert(printed["discover"], t.DiscoverResult)
    direct = demo.ask(request("cli", "server/discover"))["result"]
    assert printed["discover"] == direct
    assert {tool["name"] for tool in printed["tools"]} == {"convert_temperature", "add", "count_down", "save_note"}
    add = next(tool for tool in printed["tools"] if tool["name"] == "add")
    assert set(add["inputSchema"]["properties"]) == {"a", "b"}
    assert [r["uri"] for r in printed["resources"]] == ["demo://clock"]
    assert [r["uriTemplate"] for r in printed["resourceTemplates"]] == ["notes://{name}"]
    assert [p["name"] for p in printed["prompts"]] == ["summarize"]


def test_json_for_a_legacy_server_invents_no_caching_fields():
    proc = mcpkit("discover", "--json", "--", *everything_argv())
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert printed["era"] == "legacy" and printed["legacyVersion"] == "2025-11-25"
    for invented in ("ttlMs", "cacheScope", "resultType"):
        assert invented not in printed["discover"], invented
    assert printed["discover"]["supportedVersions"] == ["2025-11-25"]
    assert len(printed["tools"]) > 0
    card = mcpkit("discover", "--", *everything_argv())
    assert "Era:           legacy (2025-11-25" in card.stdout
    assert "Caching" not in card.stdout and "ttlMs" not in card.stdout


def test_discover_over_http_by_url():
    with served(DEMO) as srv:
        proc = mcpkit("discover", "--json", srv.url)
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert printed["era"] == "dual" and len(printed["tools"]) == 4


# ====================================================================== discover failures
def test_command_that_cannot_start():
    proc = mcpkit("discover", "--", "/nonexistent/dir/mcp-server")
    assert proc.returncode != 0
    assert "cannot start" in proc.stderr and "/nonexistent/dir/mcp-server" in proc.stderr
    assert proc.stdout == ""


def test_command_that_exits_early_shows_its_stderr():
    t0 = time.monotonic()
    proc = discover(MISBEHAVING, "crash")
    assert proc.returncode != 0
    assert "closed" in proc.stderr
    assert "the server's stderr:" in proc.stderr and "crashing on purpose" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert time.monotonic() - t0 < 10


def test_command_that_dies_with_a_traceback_shows_it():
    proc = discover("-c", "import no_such_module_for_mcpkit_tests")
    assert proc.returncode != 0
    assert "mcpkit discover:" in proc.stderr
    assert "No module named 'no_such_module_for_mcpkit_tests'" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("limit", ["0.5", "2"])
def test_timeout_bounds_the_whole_probe(limit):
    t0 = time.monotonic()
    proc = discover(MISBEHAVING, "silent", opts=("--timeout", limit))
    elapsed = time.monotonic() - t0
    assert proc.returncode != 0
    assert f"no answer within {float(limit):g} s" in proc.stderr
    assert proc.stdout == ""
    assert elapsed < float(limit) + 3, elapsed


def test_timeout_bounds_the_era_probe_too(tmp_path):
    # Answers 2026-07-28 at once but never answers the legacy initialize probe: before, the
    # "dual?" check added 5 s whatever --timeout said.
    slow_legacy = tmp_path / "modern_only_slow.py"
    slow_legacy.write_text(
        "import json, sys, time\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n"
        "    if msg.get('method') == 'initialize':\n"
        "        time.sleep(30)\n"
        "    if msg.get('method') == 'server/discover':\n"
        "        print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': {'resultType': 'complete',\n"
        f"            'supportedVersions': ['{VERSION}'], 'capabilities': {{}}, 'ttlMs': 0,\n"
        "            'cacheScope': 'private'}}), flush=True)\n")
    t0 = time.monotonic()
    proc = mcpkit("discover", "--timeout", "1.5", "--", sys.executable, slow_legacy)
    elapsed = time.monotonic() - t0
    assert elapsed < 4.5, (elapsed, proc.stderr)
    assert proc.returncode == 0, proc.stderr  # the card is shown; the era verdict is "modern"
    assert "Era:           modern" in proc.stdout


def test_garbage_printing_server_shows_the_garbage():
    proc = mcpkit("discover", "--timeout", "5", "--", sys.executable, GARBAGE)
    assert proc.returncode != 0
    assert "the server writes to stdout what is not JSON-RPC" in proc.stderr  # at once, not after 5 s
    assert "not JSON-RPC" in proc.stderr
    assert "starting weather server v0.1" in proc.stderr


def test_server_answering_with_an_error():
    proc = discover(MISBEHAVING, "erroring")
    assert proc.returncode != 0
    assert "-32603" in proc.stderr and "always failing" in proc.stderr
    assert proc.stdout == ""


def test_discover_without_target_is_a_usage_error():
    proc = mcpkit("discover")
    assert proc.returncode == 2
    assert "COMMAND" in proc.stderr


def test_a_word_that_is_no_target_is_a_usage_error():
    proc = mcpkit("discover", "weather")
    assert proc.returncode == 2
    assert "not a TARGET" in proc.stderr


def test_missing_file_target_says_so():
    proc = mcpkit("discover", "no_such_weather.py")
    assert proc.returncode == 2
    assert "no such file: no_such_weather.py" in proc.stderr


# ====================================================================== HTTP: auth, headers, the extra
@pytest.fixture(scope="module")
def auth_url():
    from tests.helpers.servers import ServerProcess

    srv = ServerProcess(lambda port: [sys.executable, str(AUTH_SERVER), str(port)])
    try:
        assert srv.wait_ready(), srv.output()
        yield srv.url
    finally:
        srv.stop()


def test_401_is_a_clear_message(auth_url):
    proc = mcpkit("discover", auth_url)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "requires authorization (HTTP 401, a bearer token is required)" in lines[0]
    assert "--bearer TOKEN" in lines[0]
    assert "without a JSON-RPC body" not in proc.stderr


def test_wrong_credentials_are_named_as_such(auth_url):
    proc = mcpkit("discover", "--bearer", "wrong", auth_url)
    assert proc.returncode == 1
    assert "refused the credentials" in proc.stderr


@pytest.mark.parametrize("opts", [("--bearer", "s3cret"), ("--header", "Authorization: Bearer s3cret"),
                                  ("-H", "Authorization:Bearer s3cret")])
def test_header_and_bearer_reach_the_server(auth_url, opts):
    proc = mcpkit("discover", *opts, auth_url)
    assert proc.returncode == 0, proc.stderr
    assert "mcpkit-demo" in proc.stdout
    call = mcpkit("call", "add", "a=1", "b=2", *opts, auth_url)
    assert call.returncode == 0 and call.stdout == "3\n", call.stderr


def test_a_malformed_header_is_a_usage_error():
    proc = mcpkit("discover", "--header", "no-colon", "http://127.0.0.1:9/mcp")
    assert proc.returncode == 2
    assert "--header must look like KEY:VALUE" in proc.stderr


def test_header_for_a_stdio_server_is_refused():
    proc = mcpkit("discover", "--bearer", "x", "--", sys.executable, DEMO)
    assert proc.returncode == 2
    assert "for http(s) URLs" in proc.stderr


@pytest.mark.parametrize("argv", [
    ["discover", "http://127.0.0.1:9/mcp"],
    ["call", "add", "a=1", "http://127.0.0.1:9/mcp"],
    ["list", "http://127.0.0.1:9/mcp"],
    ["serve", "--http", str(DEMO)],
])
def test_missing_http_extra_names_the_extra(argv):
    proc = mcpkit_without_http_extra(*argv)
    assert proc.returncode == 1
    assert "pip install 'mcpkit[http]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_stdio_target_works_without_the_http_extra():
    proc = mcpkit_without_http_extra("call", "add", "a=1", "b=1", "--", sys.executable, DEMO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "2\n"


def test_env_reaches_a_stdio_server(tmp_path):
    server = tmp_path / "env_server.py"
    server.write_text("import os\nfrom mcpkit import Server\nserver = Server('env', '1.0.0')\n\n"
                      "@server.tool()\ndef show() -> str:\n    return os.environ.get('CLI_TEST_VALUE', 'unset')\n")
    proc = mcpkit("call", "show", "-e", "CLI_TEST_VALUE=hello world", server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello world\n"


def test_bearer_token_from_the_environment(auth_url):
    from tests.helpers.paths import subprocess_env

    proc = mcpkit("call", "add", "a=1", "b=2", auth_url, env=subprocess_env(MCPKIT_BEARER_TOKEN="s3cret"))
    assert proc.returncode == 0 and proc.stdout == "3\n", proc.stderr


# ====================================================================== login / logout (mcpkit.cli._login)
def test_login_and_logout_are_wired(tmp_path):
    assert "login" in mcpkit("--help").stdout
    assert "--client-credentials" in mcpkit("login", "--help").stdout
    proc = mcpkit("logout", "http://127.0.0.1:9/mcp", "--token-store", tmp_path / "tokens.json", "--no-revoke")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "No stored tokens for http://127.0.0.1:9/mcp.\n"
    bad = mcpkit("login", "not-a-url")
    assert bad.returncode == 2 and "URL must be http(s)" in bad.stderr


def test_a_list_the_server_fails_to_give_is_shown_not_fatal(tmp_path):
    server = tmp_path / "broken_list.py"
    server.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n"
        "    if 'id' not in msg:\n"
        "        continue\n"
        "    if msg.get('method') == 'server/discover':\n"
        "        out = {'result': {'resultType': 'complete', 'supportedVersions': ['" + VERSION + "'],\n"
        "               'capabilities': {'tools': {}, 'prompts': {}}, 'ttlMs': 0, 'cacheScope': 'private'}}\n"
        "    elif msg.get('method') == 'prompts/list':\n"
        "        out = {'result': {'resultType': 'complete', 'prompts': [{'name': 'hello'}],\n"
        "               'ttlMs': 0, 'cacheScope': 'private'}}\n"
        "    else:\n"
        "        out = {'error': {'code': -32603, 'message': 'tools are broken today'}}\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], **out}), flush=True)\n")
    proc = mcpkit("discover", "--timeout", "3", "--", sys.executable, server)
    assert proc.returncode == 0, proc.stderr
    assert "Tools: (error -32603: tools are broken today)" in proc.stdout
    assert "Prompts (1):" in proc.stdout
    as_json = json.loads(mcpkit("discover", "--json", "--timeout", "3", "--", sys.executable, server).stdout)
    assert as_json["errors"] == {"tools": "error -32603: tools are broken today"}
