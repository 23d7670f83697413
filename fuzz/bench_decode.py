"""Time ``codec.decode`` on representative frames (ns per call, best of several runs).

    PYTHONPATH=. python fuzz/bench_decode.py
    baseline=$(mktemp --suffix .py) && git show main:mcpkit/protocol/codec.py > "$baseline"
    PYTHONPATH=. python fuzz/bench_decode.py --baseline "$baseline"

With ``--baseline`` another version of ``codec.py`` is loaded beside this one and the two
are timed alternately, run after run, so that a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import timeit
from typing import Any

import msgspec

from mcpkit.protocol import codec

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1.0"},
}


def _call(arguments: dict, name: str = "convert_temperature", **meta: object) -> bytes:
    return msgspec.json.encode({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                                "params": {"_meta": {**META, **meta}, "name": name, "arguments": arguments}})


FRAMES = {
    # The typical call: a short argument object.
    "tools/call": _call({"value": 72.5, "to": "celsius"}),
    # A richer client: more capabilities, a progress token, a few nested arguments.
    "tools/call-700B": _call(
        {"query": "weather in Paris tomorrow morning", "filters": {"lang": ["en", "fr"], "limit": 10}},
        name="search", progressToken="tok-123",
        **{"io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {"listChanged": True}},
           "io.modelcontextprotocol/clientInfo": {"name": "some-host-application", "version": "12.4.1",
                                                  "title": "Some Host Application"}}),
    # Large arguments: mostly text (a document), and many small objects (a table).
    "text-13KB": _call({"text": 'lorem ipsum "dolor" sit amet\n' * 400}, name="summarize"),
    "table-10KB": _call({"rows": [{"name": f"item {i}", "value": i * 1.5, "tags": ["a", "b"]} for i in range(200)]},
                        name="load"),
    # A tools/list result as a client decodes it (30 tools with schemas).
    "tools/list-result": msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": f"tool_{i}", "description": "Does a thing with its inputs. " * 3,
         "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                                          "c": {"type": "array", "items": {"type": "number"}}},
                         "required": ["a"]}} for i in range(30)]}}),
}


def _load(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("mcpkit.protocol._codec_baseline", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # msgspec resolves the module's annotations through it
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--number", type=int, default=0, help="calls per timing run (default: scaled to the frame size)")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--baseline", help="another codec.py to time alternately with this one")
    args = ap.parse_args()
    versions = {"this": codec}
    if args.baseline:
        versions = {"baseline": _load(args.baseline), "this": codec}
    print(f"{'frame':20s} {'size':>9s}  " + "  ".join(f"{k:>12s}" for k in versions) + ("    change" if args.baseline else ""))
    for name, frame in FRAMES.items():
        n = args.number or max(2000, 4_000_000 // len(frame))
        best = {k: float("inf") for k in versions}
        for _ in range(args.repeat):
            for k, mod in versions.items():
                mod.decode(frame)
                t = min(timeit.repeat(lambda d=mod.decode, f=frame: d(f), number=n, repeat=1))
                best[k] = min(best[k], t / n * 1e9)
        cells = "  ".join(f"{best[k]:9.0f} ns" for k in versions)
        change = f"   {(best['this'] / best['baseline'] - 1) * 100:+6.1f}%" if args.baseline else ""
        print(f"{name:20s} {len(frame):7d} B  {cells}{change}")


if __name__ == "__main__":
    main()
