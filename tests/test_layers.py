"""The layering rules of the package, checked on the source (every import, even inside functions).

- ``mcpkit.protocol`` is pure: the standard library, msgspec and itself only, and never
  ``asyncio``, ``socket`` or ``os``.
- ``mcpkit.server`` may import ``mcpkit.transports``; ``mcpkit.transports`` never imports
  ``mcpkit.server`` (it depends on the protocols in ``transports/_interface.py``).
- ``mcpkit.client`` never imports the package root, nor ``mcpkit.server`` outside
  ``TYPE_CHECKING`` (except the in-memory transport, whose job is to call a Server).
- ``mcpkit.extensions`` imports no private module of another package (public hooks only).
- No cross-package private imports: a private module (or name) of a top-level package
  ``mcpkit.X`` is imported only from inside ``mcpkit.X``; other packages use what its
  ``__init__`` (or a public module) exports. The root's own modules (``mcpkit/__init__.py``,
  ``mcpkit/_*.py``) are the package ``mcpkit``: they follow the rule too, and their private
  modules are the helpers every package shares (``_lazy``, ``_version``, ``_probe``...).
  Lazy-export tables and ``importlib`` strings (``"mcpkit.server._bus"``) count as imports.
- No module in ``mcpkit`` is over 600 lines, except those on a shrinking allow-list.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "mcpkit"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, bool, int]]:
    """(absolute module imported, under TYPE_CHECKING, line) for every import in ``path``."""
    return _parse_imports(path.read_text(), _module_name(path), path.name == "__init__.py", str(path))


def _parse_imports(source: str, name: str, is_package: bool, filename: str = "<source>") -> list[tuple[str, bool, int]]:
    """The imports of ``source``, the module ``name``; ``from m import _x`` also yields ``m._x``
    (a private name, or module, of ``m``)."""
    tree = ast.parse(source, filename)
    package = name if is_package else name.rpartition(".")[0]
    out: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            guarded = typing_only
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for sub in child.body:
                    visit_one(sub, True)
                for sub in child.orelse:
                    visit_one(sub, typing_only)
                continue
            visit_one(child, guarded)

    def visit_one(child: ast.AST, typing_only: bool) -> None:
        if isinstance(child, ast.Import):
            out.extend((a.name, typing_only, child.lineno) for a in child.names)
        elif isinstance(child, ast.ImportFrom):
            if child.level:
                base = package.split(".")
                base = base[: len(base) - (child.level - 1)]
                mod = ".".join(base + ([child.module] if child.module else []))
            else:
                mod = child.module or ""
            if child.module is None or mod == "mcpkit":
                # ``from . import x``: each name may be a submodule
                out.extend((f"{mod}.{a.name}" if mod != "mcpkit" or _is_submodule(a.name) else mod, typing_only,
                            child.lineno) for a in child.names)
            else:
                out.append((mod, typing_only, child.lineno))
                out.extend((f"{mod}.{a.name}", typing_only, child.lineno) for a in child.names
                           if a.name.startswith("_") and not a.name.startswith("__"))
        visit(child, typing_only)

    visit(tree, False)
    return out


def _is_submodule(name: str) -> bool:
    return (PKG / name).is_dir() or (PKG / f"{name}.py").exists()


def _files(sub: str) -> list[Path]:
    return sorted((PKG / sub).rglob("*.py"))


def _under(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


def test_protocol_is_pure() -> None:
    bad = []
    for path in _files("protocol"):
        for mod, _typing, line in _imports(path):
            top = mod.split(".")[0]
            if top in ("asyncio", "socket", "os"):
                bad.append(f"{path.name}:{line} imports {mod}")
            elif top == "mcpkit":
                if not _under(mod, "mcpkit.protocol"):
                    bad.append(f"{path.name}:{line} imports {mod}")
            elif top not in sys.stdlib_module_names and top not in ("msgspec", "__future__"):
                bad.append(f"{path.name}:{line} imports {mod}")
    assert not bad, bad


def test_transports_never_import_the_server() -> None:
    bad = [f"{p.name}:{line} imports {mod}" for p in _files("transports")
           for mod, _typing, line in _imports(p) if _under(mod, "mcpkit.server")]
    assert not bad, bad


def test_client_imports_neither_the_root_nor_the_server() -> None:
    bad = []
    for path in _files("client"):
        for mod, typing_only, line in _imports(path):
            if mod == "mcpkit":
                bad.append(f"{path.name}:{line} imports the package root")
            elif _under(mod, "mcpkit.server") and not typing_only and path.name != "_memory.py":
                bad.append(f"{path.name}:{line} imports {mod}")
    assert not bad, bad


def test_extensions_use_only_public_names() -> None:
    # An extension is built on the public hooks: no private module of another package, even for typing.
    bad = []
    for path in _files("extensions"):
        for mod, _typing, line in _imports(path):
            parts = mod.split(".")
            if parts[0] == "mcpkit" and not _under(mod, "mcpkit.extensions") and mod != "mcpkit._lazy" \
                    and any(p.startswith("_") for p in parts[1:]):
                bad.append(f"{path.name}:{line} imports {mod}")
    assert not bad, bad


@pytest.mark.parametrize("sub", ["protocol", "server", "transports", "client", "extensions"])
def test_checker_sees_imports(sub: str) -> None:
    # Guard against a checker that silently sees nothing.
    assert any(_imports(p) for p in _files(sub))


#: ``"mcpkit.server._bus"``, ``"mcpkit.client.oauth._hook:OAuth"``: a module named in a string
#: (a lazy-export table, ``importlib.import_module``) is imported too.
_MODULE_STRING = re.compile(r"mcpkit(?:\.\w+)+(?=:\w*$|$)")


def _named_modules(source: str) -> list[tuple[str, int]]:
    """(module, line) for every string constant in ``source`` that names an mcpkit module."""
    return [(m.group(0), node.lineno) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (m := _MODULE_STRING.match(node.value)) is not None]


def _top_package(mod: str) -> str:
    """``mcpkit.server`` for ``mcpkit.server._bus``; ``mcpkit`` for the root's own modules."""
    parts = mod.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and (PKG / parts[1]).is_dir() else parts[0]


def _cross_private(source: str, name: str, is_package: bool) -> list[str]:
    """Each import in module ``name`` of a private module or name of another top-level package."""
    own = _top_package(name)
    found = [(mod, line) for mod, _typing, line in _parse_imports(source, name, is_package)]
    bad = []
    for mod, line in found + _named_modules(source):
        top = _top_package(mod)
        if mod.split(".")[0] != "mcpkit" or top in (own, "mcpkit"):
            continue  # not mcpkit, its own package, or the root's shared helpers
        inner = mod.split(".")[top.count(".") + 1:]
        if any(p.startswith("_") for p in inner):
            bad.append(f"{name}:{line} imports {mod}")
    return sorted(set(bad))


def test_no_cross_package_private_imports() -> None:
    # Another package's private modules are its own business: use what its __init__ exports.
    bad = [b for path in sorted(PKG.rglob("*.py"))
           for b in _cross_private(path.read_text(), _module_name(path), path.name == "__init__.py")]
    assert not bad, "private modules of another package (export the name from its __init__):\n" + "\n".join(bad)


def test_checker_sees_private_imports() -> None:
    source = ("from typing import TYPE_CHECKING\n"
              "from ..transports import _asgi\n"
              "from ..server import Server\n"
              "from .._lazy import lazy_exports\n"
              "from ._target import Target\n"
              "if TYPE_CHECKING:\n"
              "    from mcpkit.client._hooks import Around\n"
              "def f():\n"
              "    import mcpkit.server._bus\n"
              "    from ..server._loader import load\n"
              "TABLE = {'X': 'mcpkit.client.oauth._hook', 'Y': 'mcpkit.transports._asgi:', 'Z': 'mcpkit.server'}\n")
    assert _cross_private(source, "mcpkit.inspect._app", False) == sorted([
        "mcpkit.inspect._app:2 imports mcpkit.transports._asgi",
        "mcpkit.inspect._app:7 imports mcpkit.client._hooks",
        "mcpkit.inspect._app:9 imports mcpkit.server._bus",
        "mcpkit.inspect._app:10 imports mcpkit.server._loader",
        "mcpkit.inspect._app:11 imports mcpkit.client.oauth._hook",
        "mcpkit.inspect._app:11 imports mcpkit.transports._asgi",
    ])
    # The root is the package mcpkit: its modules may not reach into a package's privates either.
    assert _cross_private("from .server._keys import parse_env\n", "mcpkit._workers", False) == [
        "mcpkit._workers:1 imports mcpkit.server._keys"]
    # Inside one top-level package (sub-packages included), private modules are fair game.
    assert _cross_private("from .._bus import Bus\n", "mcpkit.server.auth._gate", False) == []


MAX_LINES = 600
#: Modules still over MAX_LINES, each waiting for its split. Only ever remove entries.
OVERSIZE_ALLOWED: frozenset[str] = frozenset()


def _oversize() -> dict[str, int]:
    sizes = {path.relative_to(PKG.parent).as_posix(): len(path.read_text().splitlines())
             for path in sorted(PKG.rglob("*.py"))}
    return {mod: n for mod, n in sizes.items() if n > MAX_LINES}


def test_no_module_over_the_size_cap() -> None:
    over = _oversize()
    bad = {mod: n for mod, n in over.items() if mod not in OVERSIZE_ALLOWED}
    assert not bad, f"over {MAX_LINES} lines (split them into small modules): {bad}; all over the cap: {over}"


def test_size_allow_list_only_shrinks() -> None:
    # An entry that is gone or back under the cap must leave the list, so it cannot grow back.
    over = _oversize()
    stale = sorted(mod for mod in OVERSIZE_ALLOWED if mod not in over)
    assert not stale, f"no longer over {MAX_LINES} lines, drop from OVERSIZE_ALLOWED: {stale}"
