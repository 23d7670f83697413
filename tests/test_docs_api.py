"""The API reference covers the public surface: every public name of ``mcpkit``,
``mcpkit.server``, ``mcpkit.client`` and ``mcpkit.errors`` is on a page of docs/api (a
``::: path`` directive, or a module directive's ``members`` list), and every public class,
function, method and property of them has a docstring (mkdocstrings leaves out members
without one, so an undocumented method is missing from its page). docs/cli.md's table has a
row for every command."""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import pytest

from mcpkit.cli import COMMANDS
from tests.helpers.paths import ROOT

MODULES = ("mcpkit", "mcpkit.server", "mcpkit.client", "mcpkit.errors")
#: Public names that are not API objects of their own (a module, a constant, the version).
NOT_OBJECTS = {"types", "LATEST_PROTOCOL_VERSION", "__version__"}


def _resolve(path: str) -> Any:
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def _directives() -> list[tuple[str, Any, list[str] | None]]:
    """(page, object, members or None) of every ``::: path`` in docs/api."""
    out = []
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        text = page.read_text()
        for m in re.finditer(r"^::: ([\w.]+)\n((?:    .*\n)*)", text, re.M):
            members = re.search(r"members: \[([^\]]*)\]", m.group(2))
            listed = [x.strip() for x in members.group(1).split(",")] if members else None
            out.append((page.name, _resolve(m.group(1)), listed))
    return out


def _documented() -> set[int]:
    ids: set[int] = set()
    for _page, obj, members in _directives():
        if inspect.ismodule(obj):
            names = members if members is not None else [n for n in vars(obj) if not n.startswith("_")]
            ids.update(id(getattr(obj, n)) for n in names)
        else:
            ids.add(id(obj))
    return ids


def _public() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            if name not in NOT_OBJECTS:
                out.setdefault(f"{modname}.{name}", getattr(mod, name))
    return out


def _doc(obj: Any) -> str:
    return (inspect.getdoc(obj) or "").strip() if not isinstance(obj, property) else (obj.__doc__ or "").strip()


def test_every_public_name_is_on_an_api_page() -> None:
    documented = _documented()
    missing = sorted(name for name, obj in _public().items() if id(obj) not in documented)
    assert not missing, f"not on any docs/api page: {missing}"


def test_every_public_name_and_member_has_a_docstring() -> None:
    missing: list[str] = []
    seen: set[int] = set()
    for name, obj in _public().items():
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if inspect.isclass(obj) or inspect.isfunction(obj):
            own = obj.__doc__ if inspect.isfunction(obj) else vars(obj).get("__doc__")
            if not (own or "").strip():
                missing.append(name)
        if not inspect.isclass(obj):
            continue
        for klass in obj.__mro__:
            if not klass.__module__.startswith("mcpkit"):
                continue
            for attr, value in vars(klass).items():
                if attr.startswith("_"):
                    continue
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if (isinstance(value, property) or inspect.isfunction(value)) and not _doc(value):
                    missing.append(f"{name}.{attr} ({klass.__qualname__})")
    assert not missing, "public names without a docstring:\n" + "\n".join(dict.fromkeys(missing))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cli_page_has_every_command(command: str) -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    assert re.search(rf"^\| `mcpkit {command}\b", text, re.M), f"docs/cli.md's table has no row for mcpkit {command}"
