"""The ``mcpkit`` command: ``discover`` prints a card or the exact DiscoverResult JSON, ``serve``
runs a server over stdio, and every failure is a clear message with a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import msgspec
import pytest

from mcpkit.protocol import types as t
from tests.helpers.messages import VERSION, request
from tests.helpers.paths import DEMO, MISBEHAVING, ROOT, SERVERS, TEST_SERVER, serve_argv, subprocess_env


def mcpkit(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcpkit", *args], capture_output=True, text=True,
                          cwd=ROOT, env=subprocess_env(), timeout=timeout)


def discover(*cmd: str, opts: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return mcpkit("discover", *opts, "--", sys.executable, *cmd)


# ====================================================================== discover: the card
def test_card_for_the_demo():
    proc = discover(str(DEMO))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert "mcpkit-demo" in lines[0] and "1.0.0" in lines[0] and "mcpkit demo" in lines[0]
    assert VERSION in out
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
    proc = discover(str(TEST_SERVER))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("sleep", "echo", "noisy", "boom", "refuse", "whoami", "multiline", "greet", "test://broken"):
        assert any(row.split() and row.split()[0] == name for row in out.splitlines()), name
    assert "First line of a long description." in out
    assert "Second paragraph" not in out
    assert "A server for tests." in out
    assert "mcpkit-testserver" in out and "9.9.9" in out


def test_card_from_a_served_file():
    proc = mcpkit("discover", "--", *serve_argv(DEMO))
    assert proc.returncode == 0, proc.stderr
    assert "mcpkit-demo" in proc.stdout


# ====================================================================== discover --json
def test_json_is_exactly_the_discover_result(demo):
    proc = discover(str(DEMO), opts=("--json",))
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    msgspec.convert(printed, t.DiscoverResult)
    direct = demo.ask(request("cli", "server/discover"))["result"]
    assert printed == direct
    assert set(printed) == {"resultType", "supportedVersions", "capabilities", "instructions", "ttlMs",
                            "cacheScope", "_meta"}


# ====================================================================== discover failures
def test_command_that_cannot_start():
    proc = mcpkit("discover", "--", "/nonexistent/dir/mcp-server")
    assert proc.returncode != 0
    assert "cannot start" in proc.stderr and "/nonexistent/dir/mcp-server" in proc.stderr
    assert proc.stdout == ""


def test_command_that_exits_early():
    t0 = time.monotonic()
    proc = discover(str(MISBEHAVING), "crash")
    assert proc.returncode != 0
    assert "closed" in proc.stderr
    assert "Traceback" not in proc.stderr.replace("crashing on purpose", "")
    assert proc.stdout == ""
    assert time.monotonic() - t0 < 10


def test_command_that_never_answers():
    t0 = time.monotonic()
    proc = discover(str(MISBEHAVING), "silent", opts=("--timeout", "0.5"))
    assert proc.returncode != 0
    assert "no answer" in proc.stderr and "0.5" in proc.stderr
    assert proc.stdout == ""
    assert time.monotonic() - t0 < 10


def test_command_that_dies_with_a_traceback():
    proc = discover("-c", "import no_such_module_for_mcpkit_tests")
    assert proc.returncode != 0
    assert "mcpkit discover:" in proc.stderr
    assert proc.stdout == ""


def test_server_answering_with_an_error():
    proc = discover(str(MISBEHAVING), "erroring")
    assert proc.returncode != 0
    assert "-32603" in proc.stderr and "always failing" in proc.stderr
    assert proc.stdout == ""


def test_discover_without_target_is_a_usage_error():
    proc = mcpkit("discover")
    assert proc.returncode == 2
    assert "COMMAND" in proc.stderr


def test_version_flag():
    proc = mcpkit("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("mcpkit ")


# ====================================================================== serve
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


@pytest.mark.parametrize("spec,message", [
    ("no/such/file.py", "no such file"),
    ("no_such_module_xyz:server", "no_such_module_xyz"),
    ("examples.demo:nothing", "nothing"),
    ("json", "exactly one"),
])
def test_serve_with_a_bad_spec_fails_clearly(spec, message):
    proc = subprocess.run(serve_argv(spec), capture_output=True, text=True,
                          cwd=ROOT, env=subprocess_env(), timeout=20, input="")
    assert proc.returncode != 0
    assert message in proc.stderr
    assert proc.stdout == ""
