"""What the cold-start shortcuts must keep: msgspec imported without typing_extensions behaves
as with it, and the tool decorator's inspect-free reading of a plain function's parameters
agrees with inspect.signature (issue 24)."""

from __future__ import annotations

import functools
import inspect
import subprocess
import sys
import textwrap
import types
from typing import Annotated, Any

import pytest

from mcpkit.server import _signature as S
from tests.helpers.paths import ROOT, subprocess_env


def _run(code: str, **env: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                          env={**subprocess_env(), **env}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


# ------------------------------------------------------------------ msgspec without typing_extensions
_TYPED_DICTS = """
    import sys
    from mcpkit import Server
    import mcpkit._lean_msgspec as lean
    print("finder gone:", lean._Finder not in sys.meta_path)
    print("typing_extensions loaded by mcpkit:", "typing_extensions" in sys.modules)
    import msgspec
    import typing_extensions as te

    class Point(te.TypedDict):
        x: int
        y: te.NotRequired[int]
        label: te.Required[te.Annotated[str, msgspec.Meta(min_length=1)]]

    class Loose(te.TypedDict, total=False):
        a: te.Required[int]
        b: str

    print(msgspec.convert({"x": 1, "label": "a"}, Point))
    for bad in ({"label": "a"}, {"x": 1, "label": ""}):
        try:
            msgspec.convert(bad, Point)
        except msgspec.ValidationError as exc:
            print("refused:", exc)
    print(msgspec.convert({"a": 1}, Loose))
    print(msgspec.json.encode(msgspec.json.schema(Point)).decode())
    print(msgspec.json.encode(msgspec.json.schema(Loose)).decode())
    print(msgspec.convert("b", te.Literal["a", "b"]))
"""


def test_msgspec_is_imported_without_typing_extensions_and_behaves_the_same():
    lean = _run(_TYPED_DICTS)
    full = _run(_TYPED_DICTS, MCPKIT_MSGSPEC_TYPING_EXTENSIONS="1")
    assert "finder gone: True" in lean and "typing_extensions loaded by mcpkit: False" in lean, lean
    assert "typing_extensions loaded by mcpkit: True" in full, full
    strip = lambda out: [line for line in out.splitlines() if "loaded by mcpkit" not in line]
    assert strip(lean) == strip(full)
    assert "refused: Object missing required field `x`" in lean
    assert "refused: Expected `str` of length >= 1 - at `$.label`" in lean


def test_only_msgspec_is_refused_typing_extensions():
    """Another import of typing_extensions while msgspec's helpers are not yet loaded gets the
    real module, and msgspec then keeps using it."""
    out = _run("""
        import sys
        import mcpkit
        import mcpkit._lean_msgspec as lean
        assert lean._Finder in sys.meta_path
        import typing_extensions
        print(typing_extensions.__name__, hasattr(typing_extensions, "TypedDict"))
        import msgspec._utils
        print(msgspec._utils._get_type_hints is typing_extensions.get_type_hints)
    """)
    assert out.splitlines() == ["typing_extensions True", "True"]


def test_nothing_changes_when_msgspec_was_imported_first():
    out = _run("""
        import sys
        import msgspec
        import mcpkit, mcpkit._lean_msgspec as lean
        from mcpkit import Server
        print(lean._Finder in sys.meta_path, "typing_extensions" in sys.modules)
    """)
    assert out == "False True"


# ------------------------------------------------------------------ parameters without inspect
def _p_plain(a, b=2, *, c, d=None):
    return a


async def _p_async(text: str, n: int = 3) -> str:
    return text


def _p_none() -> None:
    return None


def _p_defaults_mixed(a: int, b: str = "x", c: Annotated[int, "the c"] = 4, *, k: bool = True, m: float) -> int:
    return a


def _p_locals(a: int) -> int:
    x = a + 1
    y = x * 2
    return y


@pytest.mark.parametrize("fn", [_p_plain, _p_async, _p_none, _p_defaults_mixed, _p_locals,
                                lambda q, r=1: q], ids=lambda f: f.__name__)
def test_a_plain_functions_parameters_are_those_inspect_reads(fn):
    got = S._plain_parameters(fn)
    assert got is not None
    assert got == S._inspected_parameters(fn)
    assert got[0] is inspect.iscoroutinefunction(fn)
    expected = [(n, p.default if p.default is not p.empty else S._EMPTY) for n, p in inspect.signature(fn).parameters.items()]
    assert [(n, d) for n, _, d in got[1]] == expected


def _wrapped(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)
    return inner


class _Callable:
    def __call__(self, text: str) -> str:
        return text

    def method(self, text: str, n: int = 1) -> str:
        return text


def _with_signature(a, b):
    return a


_with_signature.__signature__ = inspect.signature(lambda only: None)  # type: ignore[attr-defined]


def _posonly(a, /, b):
    return a


def _star(*args):
    return args


@pytest.mark.parametrize("fn", [_wrapped(_p_async), functools.partial(_p_plain, 1), _Callable(), _Callable().method,
                                _with_signature, _posonly, _star, len], ids=repr)
def test_anything_else_goes_to_inspect(fn):
    assert S._plain_parameters(fn) is None
    S._inspected_parameters(fn)  # answers, or raises as inspect.signature does


def test_a_function_marked_as_a_coroutine_goes_to_inspect():
    if not hasattr(inspect, "markcoroutinefunction"):
        pytest.skip("inspect.markcoroutinefunction is Python 3.12+")

    def sync_looking(text: str) -> Any:
        return text
    inspect.markcoroutinefunction(sync_looking)
    assert S._plain_parameters(sync_looking) is None
    assert S._inspected_parameters(sync_looking)[0] is True


def test_the_decorator_still_refuses_what_cannot_be_described():
    from mcpkit import Server

    server = Server("s", "1")
    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs cannot be described"):
        server.tool()(_star)
    with pytest.raises(TypeError, match="positional-only parameters are not supported"):
        server.tool()(_posonly)
    server.tool()(_wrapped(_p_async))  # a functools.wraps wrapper is described by the function it wraps
    assert list(server.tools["_p_async"].sig.input_schema["properties"]) == ["text", "n"]


_DOCS = [
    "One line.", "  Leading spaces.  ", "\tTabbed", "", "\n\n", "First\n    second\n      third\n",
    "\n    Indented first.\n\n    Args:\n        x: the x\n            more x\n    Returns:\n        y\n    ",
    "First\n\tTab indented\n\t  more\n", "A\n\n\n  B\n\n", "  \n  only indented\n  lines\n", "x\n y\n  z",
    "Trailing spaces   \n    next   \n",
]


@pytest.mark.parametrize("doc", _DOCS, ids=repr)
def test_cleandoc_is_inspects(doc):
    assert S.cleandoc(doc) == inspect.cleandoc(doc)


def _gen_coroutine():  # a generator-based coroutine (types.coroutine)
    yield


@pytest.mark.parametrize("make", [
    lambda: _p_async("x"), lambda: types.coroutine(_gen_coroutine)(), lambda: _gen_coroutine(), lambda: 1,
    lambda: "text", lambda: None, lambda: __import__("asyncio").Future, lambda: _Awaitable(),
], ids=["coroutine", "generator coroutine", "generator", "int", "str", "None", "Future class", "awaitable object"])
def test_isawaitable_is_inspects(make):
    value = make()
    try:
        assert S.isawaitable(value) is inspect.isawaitable(value)
    finally:
        if inspect.iscoroutine(value):
            value.close()


class _Awaitable:
    def __await__(self):
        yield


# ------------------------------------------------------------------ the collector during lazy imports
def test_no_collection_runs_while_a_lazy_export_imports_its_subsystem():
    """``from mcpkit import Server`` imports msgspec and the server with the collector paused
    (before: a dozen collections, one of them of the first generation), and leaves it running."""
    out = _run("""
        import gc
        import mcpkit
        runs = []
        gc.callbacks.append(lambda phase, info: phase == "start" and runs.append(info["generation"]))
        from mcpkit import Server, Client
        print(len(runs), gc.isenabled(), "msgspec" in __import__("sys").modules)
    """)
    assert out == "0 True True", out


def test_a_collector_the_process_disabled_stays_disabled():
    out = _run("""
        import gc
        gc.disable()
        from mcpkit import Server
        print(gc.isenabled())
    """)
    assert out == "False"


def test_garbage_made_before_the_import_is_still_collected():
    """The objects alive at the import go to the oldest generation, never out of reach: a
    cycle dropped before ``from mcpkit import Server`` is freed by the next full collection."""
    out = _run("""
        import gc, weakref
        import mcpkit
        gc.collect()

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = []
        weakref.finalize(a, gone.append, "a")
        del a, b
        from mcpkit import Server
        print(gone, gc.get_freeze_count())
        gc.collect()
        print(gone)
    """)
    assert out.splitlines() == ["[] 0", "['a']"], out


def test_a_failed_lazy_import_leaves_the_collector_running():
    import gc

    from mcpkit._lazy import lazy_exports

    getattr_, _ = lazy_exports("pkg", {"Missing": "mcpkit._no_such_module"}, {})
    assert gc.isenabled()
    with pytest.raises(ModuleNotFoundError):
        getattr_("Missing")
    assert gc.isenabled() and gc.get_freeze_count() == 0
