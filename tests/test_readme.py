"""Every code block of the README works as written (issue 23, item 6).

- A ``python`` block runs as a script of its own (from the checkout, with the venv's
  ``python`` first on PATH, as the README says), unless the line before it is a
  ``<!-- fragment: NAMES ... -->`` comment: a fragment continues a program (a started
  ``client``, your model call) and is compiled (top-level ``await`` allowed) with every name
  it uses but does not define among the NAMES its comment lists.
- ``sh`` (and ``nginx``) blocks are command lines, which the CLI tests run; here every
  ``mcpkit COMMAND`` in them is a real command.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcpkit.cli import COMMANDS
from tests.helpers.paths import ROOT, subprocess_env

README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
FRAGMENT = re.compile(r"<!-- fragment:([^>]*)-->\s*$")


def blocks() -> list[tuple[int, str, str, set[str] | None]]:
    """(line, language, code, the names a fragment may leave undefined (None: not a fragment))."""
    out = []
    for m in FENCE.finditer(README):
        before = README[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = FRAGMENT.search(before)
        names = set(re.findall(r"[A-Za-z_]\w*", mark.group(1).split("(")[0])) if mark else None
        out.append((README[:m.start()].count("\n") + 1, m.group(1), m.group(2), names))
    return out


PYTHON = [(line, code, names) for line, lang, code, names in blocks() if lang == "python"]


def test_every_block_says_what_it_is():
    langs = {lang for _line, lang, _code, _names in blocks()}
    assert langs <= {"python", "sh", "nginx", "text"}, langs
    assert len(PYTHON) >= 10


def free_names(code: str) -> set[str]:
    """The names ``code`` reads but never binds (scopes flattened: a coarse, safe check)."""
    tree = ast.parse(code)
    bound: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return used - bound - set(dir(builtins))


@pytest.mark.parametrize("line, code, names", PYTHON, ids=[f"line{line}" for line, _c, _n in PYTHON])
def test_python_block(tmp_path: Path, line: int, code: str, names: set[str] | None):
    if names is not None:
        compile(code, f"README.md:{line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        assert free_names(code) <= names, f"README.md:{line} uses undefined {free_names(code) - names}"
        return
    assert not free_names(code), f"README.md:{line} uses undefined {free_names(code)}"
    script = tmp_path / "snippet.py"
    script.write_text(code)
    env = subprocess_env(PATH=os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", ""))))
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"README.md:{line}:\n{proc.stdout}\n{proc.stderr}"


def test_the_client_example_prints_the_result():
    code = next(code for _line, code, names in PYTHON if names is None and "asyncio.run(main())" in code)  # the first: Using the client
    env = subprocess_env(PATH=os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", ""))))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "{'result': 5}\n"


def test_shell_blocks_name_real_commands():
    for line, lang, code, _names in blocks():
        if lang != "sh":
            continue
        for used in re.findall(r"(?:^|[\s/])mcpkit (\w+)", code, re.M):
            assert used in COMMANDS, f"README.md:{line}: mcpkit {used}"
