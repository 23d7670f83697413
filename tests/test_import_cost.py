"""What importing the client and a server loads: only what a first call needs (issue 24).
Module lists, never timings. Each check runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT, subprocess_env


def loaded(code: str, names: tuple[str, ...]) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(m for m in {names!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env=subprocess_env(), timeout=30)
    assert proc.returncode == 0, proc.stderr
    return list(eval(proc.stdout.strip().splitlines()[-1]))


#: Not needed to make a Client and call a tool over stdio.
CLIENT_DEFERRED = ("httpx", "httptools", "mcpkit.client._wire", "mcpkit.client._http", "mcpkit.client._sse_legacy",
                   "mcpkit.client._tasks",
                   "mcpkit.client._tasks_legacy", "mcpkit.client._skills", "mcpkit.frontmatter",
                   "mcpkit.protocol.skills", "mcpkit.client._credentials", "mcpkit.server", "hashlib", "hmac",
                   "secrets", "json", "tempfile", "shutil", "shlex")
#: Not needed to import it: the client's value classes are NamedTuples (the stdio transport
#: module, loaded when a Client is made for a command, brings dataclasses), and the sampling,
#: elicitation and roots types load when used.
CLIENT_IMPORT_DEFERRED = (*CLIENT_DEFERRED, "dataclasses", "copy", "mcpkit.protocol._types_more")


def test_from_mcpkit_import_client_loads_only_the_call_path():
    assert loaded("from mcpkit import Client", CLIENT_IMPORT_DEFERRED) == []


def test_a_stdio_client_made_for_a_command_list_still_defers_them():
    # Constructing it picks the stdio transport; the era key of a command line is JSON, so json is allowed.
    code = "from mcpkit import Client\nClient([sys.executable, '-c', 'pass'])"
    assert loaded(code, tuple(m for m in CLIENT_DEFERRED if m != "json")) == []


@pytest.mark.parametrize("name", ["TaskHandle", "LoadedSkill", "Recovery", "EraCache", "Notification"])
def test_the_client_package_still_exports_everything_lazily(name):
    assert loaded(f"import mcpkit.client as c\nassert getattr(c, {name!r}) is not None", ()) == []


def test_a_one_tool_server_loads_no_key_derivation_until_request_state_is_used():
    code = ("from mcpkit import Server\nserver = Server('s', '1')\n"
            "@server.tool()\ndef echo(text: str) -> str:\n    return text\n")
    assert loaded(code, ("hashlib", "hmac", "mcpkit.server._keys", "json")) == []


def test_state_keys_given_are_still_checked_at_once():
    proc = subprocess.run([sys.executable, "-c", "from mcpkit import Server\nServer('s', '1', state_keys=['hunter2'])"],
                          capture_output=True, text=True, cwd=ROOT, env=subprocess_env(), timeout=30)
    assert proc.returncode != 0 and "WeakKeyError" in proc.stderr


def test_a_stdio_server_answers_discover_without_asyncio():
    """The stdio opening answers the first lines before any event loop exists: serving one
    ``server/discover`` and reaching EOF never imports asyncio (about 20 ms of a cold start)."""
    line = ('{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{'
            '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            '"io.modelcontextprotocol/clientCapabilities":{},'
            '"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}\n')
    code = ("import sys, os\nfrom mcpkit import Server\nserver = Server('cold', '1')\n"
            "@server.tool()\ndef echo(text: str) -> str:\n    return text\n"
            "server.run(out_fd=os.dup(1))\n"
            "sys.stderr.write(repr(sorted(m for m in ('asyncio',) if m in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", code], input=line, capture_output=True, text=True, cwd=ROOT,
                          env=subprocess_env(), timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert '"result"' in proc.stdout, proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr


_DISCOVER = ('{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{'
             '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
             '"io.modelcontextprotocol/clientCapabilities":{},'
             '"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}\n')

#: Not loaded before a stdio server's first ``server/discover`` answer (each was part of the
#: cold start, issue 24). ``typing_extensions`` is msgspec's (mcpkit imports msgspec without
#: it: mcpkit/_lean_msgspec.py); ``inspect`` (with ast, dis, tokenize) the tool decorator's.
COLD_DEFERRED = ("inspect", "ast", "dis", "tokenize", "typing_extensions", "asyncio", "logging", "traceback", "weakref", "dataclasses", "copy", "base64", "binascii", "heapq",
                 "shutil", "bz2", "lzma", "mcpkit.server._once", "mcpkit.server._keys", "mcpkit.protocol._types_more",
                 "mcpkit.server._uritemplate", "mcpkit.protocol.subscriptions", "mcpkit.observability")
#: Also not loaded by a server file run directly (``mcpkit serve`` loads them to load the file).
LOADER = ("contextvars", "mcpkit.transports._loading")

# A server file that reports, as the process ends right after its last answer (fast exit
# runs atexit handlers), which of COLD_DEFERRED were loaded by then.
_REPORTING_SERVER = (
    "import atexit, sys\nfrom mcpkit import Server\nserver = Server('cold', '1')\n"
    "@server.tool()\ndef echo(text: str) -> str:\n    '''Echo the text back.'''\n    return text\n"
    f"atexit.register(lambda: sys.stderr.write('LOADED ' + repr(sorted(m for m in {COLD_DEFERRED + LOADER!r} if m in sys.modules))))\n"
)


def _loaded_at_exit(argv: list[str]) -> list[str]:
    proc = subprocess.run(argv, input=_DISCOVER, capture_output=True, text=True, cwd=ROOT, env=subprocess_env(),
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert '"result"' in proc.stdout, proc.stdout
    report = [line for line in proc.stderr.splitlines() if line.startswith("LOADED ")]
    assert report, proc.stderr
    return list(eval(report[-1][len("LOADED "):]))


def test_a_server_file_run_directly_answers_discover_before_loading_the_deferred_modules(tmp_path):
    path = tmp_path / "cold_server.py"
    path.write_text(_REPORTING_SERVER + "server.run(fast_exit=True)\n")
    assert _loaded_at_exit([sys.executable, str(path)]) == []


def test_mcpkit_serve_answers_discover_before_loading_the_deferred_modules(tmp_path):
    path = tmp_path / "cold_server.py"
    path.write_text(_REPORTING_SERVER)
    assert _loaded_at_exit([sys.executable, "-m", "mcpkit", "serve", str(path)]) == sorted(LOADER)


def test_mcpkit_logs_to_stderr_as_before_once_logging_loads(tmp_path):
    """The stdio server still sets up the root logger (``LEVEL name: message`` on stderr); it
    just does so when mcpkit first logs or the event loop starts, not before the first answer."""
    path = tmp_path / "boom_server.py"
    path.write_text("from mcpkit import Server\nserver = Server('boom', '1')\n"
                    "@server.tool()\ndef boom() -> str:\n    raise RuntimeError('kaboom')\n"
                    "server.run(fast_exit=True)\n")
    call = _DISCOVER.replace('"id":1', '"id":2').replace('"server/discover","params":{',
                                                          '"tools/call","params":{"name":"boom","arguments":{},')
    proc = subprocess.run([sys.executable, str(path)], input=_DISCOVER + call, capture_output=True, text=True,
                          cwd=ROOT, env=subprocess_env(), timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert '"isError":true' in proc.stdout, proc.stdout
    assert "ERROR mcpkit.server: tool boom raised" in proc.stderr, proc.stderr
    assert "RuntimeError: kaboom" in proc.stderr, proc.stderr


def test_module_regular_expressions_compile_on_first_use():
    code = ("import re\nfrom mcpkit.protocol import meta\n"
            "assert not isinstance(meta._KEY_RE, re.Pattern)\n"
            "assert meta.is_valid_key('io.example/x') and not meta.is_valid_key('-bad')\n"
            "assert isinstance(meta._KEY_RE, re.Pattern)\n")
    assert loaded(code, ()) == []


@pytest.mark.parametrize("name", ["CreateMessageRequestParams", "ElicitResult", "ListRootsResult", "ProgressParams",
                                  "NOTIFICATION_PARAMS", "JSONRPCRequest", "SamplingContentBlock"])
def test_the_wire_types_defined_on_first_use_are_still_in_mcpkit_types(name):
    code = (f"import mcpkit.protocol.types as t\nimport sys\nassert {name!r} in dir(t)\n"
            f"assert 'mcpkit.protocol._types_more' not in sys.modules\n"
            f"from mcpkit.protocol.types import {name}\nimport mcpkit\n"
            f"assert getattr(t, {name!r}) is {name} is getattr(mcpkit.types, {name!r})\n")
    assert loaded(code, ()) == []


@pytest.mark.parametrize("columns", [None, "100", "30", "0", "wide"])
def test_the_cli_help_formatter_takes_argparse_width_without_shutil(monkeypatch, columns):
    import argparse

    from mcpkit.cli._help import HelpFormatter

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    ours, theirs = HelpFormatter("mcpkit serve"), argparse.HelpFormatter("mcpkit serve")
    assert (ours._width, ours._max_help_position) == (theirs._width, theirs._max_help_position)
    assert HelpFormatter("mcpkit serve", width=50)._width == argparse.HelpFormatter("mcpkit serve", width=50)._width
