"""``mcpkit.server._loader``: loading ``FILE.py[:attr]`` / ``module:attr`` without patching anything.

A ``server.run()`` (or ``run_stdio_server``) called while the file is imported hands the server to
the loader instead of serving; that scope is a context variable, held only by the importing
thread, and gone afterwards even when the import fails. Failures are one ``ServerLoadError`` line.
(The command-line side of the same rules is in test_cli_serve.py.)
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from mcpkit import Server
from mcpkit.errors import MCPKitError, ServerLoadError
from mcpkit.server import load_server
from mcpkit.server import load_spec as load
from mcpkit.transports import _stdio_main
from mcpkit.transports._loading import RunAtImport, hand_over, loading

HEAD = "from mcpkit import Server\nserver = Server('loaded', '1.2.3')\n"


def _write(tmp_path: Path, name: str, source: str) -> str:
    path = tmp_path / name
    path.write_text(source)
    return str(path)


def _scope_is_off() -> None:
    hand_over(object())  # outside loading(): does nothing


def test_a_file_that_runs_itself_at_import_is_handed_over_and_nothing_is_patched(tmp_path: Path) -> None:
    run, stdio = Server.__dict__["run"], _stdio_main.run_stdio_server
    spec = _write(tmp_path, "runs.py", HEAD + "server.run()\nraise AssertionError('the import went on')\n")
    loaded = load(spec)
    assert loaded.ran_at_import and loaded.server.name == "loaded"
    assert Server.__dict__["run"] is run and _stdio_main.run_stdio_server is stdio
    _scope_is_off()


def test_run_stdio_server_at_import_is_handed_over_too(tmp_path: Path) -> None:
    import mcpkit.transports.stdio  # noqa: F401 (already imported: its run_stdio_server is the real one)

    spec = _write(tmp_path, "stdio_runs.py", HEAD + "from mcpkit.transports.stdio import run_stdio_server\n"
                  "run_stdio_server(server)\n")
    loaded = load(spec)
    assert loaded.ran_at_import and loaded.server.name == "loaded"


def test_a_plain_file_and_a_factory(tmp_path: Path) -> None:
    plain = load(_write(tmp_path, "plain.py", HEAD))
    assert not plain.ran_at_import and plain.server.version == "1.2.3"
    spec = _write(tmp_path, "factory.py", "from mcpkit import Server\ndef build():\n    return Server('built')\n")
    assert load_server(spec + ":build").name == "built"


@pytest.mark.parametrize(("source", "words"), [
    ("raise RuntimeError('no config file')\n", ": RuntimeError: no config file"),
    ("server = Server('x'\n", "'(' was never closed"),
    ("", "expected exactly one mcpkit Server at module level, found 0"),
])
def test_failures_are_one_line_and_leave_the_scope_off(tmp_path: Path, source: str, words: str) -> None:
    spec = _write(tmp_path, "bad.py", "from mcpkit import Server\n" + source)
    with pytest.raises(ServerLoadError) as info:
        load(spec)
    assert isinstance(info.value, MCPKitError)
    assert words in str(info.value) and "\n" not in str(info.value)
    _scope_is_off()


def test_the_scope_is_the_importing_threads_only() -> None:
    seen: list[BaseException | None] = []

    def other() -> None:
        try:
            hand_over(object())
            seen.append(None)
        except RunAtImport as exc:
            seen.append(exc)

    with loading():
        with pytest.raises(RunAtImport):
            hand_over("this thread")
        t = threading.Thread(target=other)
        t.start()
        t.join(10)
    assert seen == [None]
    with pytest.raises(ValueError), loading():
        raise ValueError("a failed import")
    _scope_is_off()
