"""Workload 6, the Pydantic path: warm sequential ``tools/call`` of ``norm(p: Point) -> Result``
(Pydantic ``BaseModel`` parameter and return type) on each side's stdio server
(``servers/pydantic_<side>.py``), interleaved round by round as the echo workload is.

Reported: calls/s per side (median of rounds) and, as the ratio, the median of the per-round
ratios (each round's mcpkit ÷ official, both measured back to back)."""

from __future__ import annotations

import json
import os

from _common import SIDES, Pinning, Results, Side, ms, norm_line, pct
from _rounds import interleaved
from _stdio import sequential, stdio_round


def check_norm(resp: dict, req_id: int, x: float, y: float) -> str | None:
    if resp.get("id") != req_id:
        return f"id {resp.get('id')!r} != {req_id}"
    result = resp.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return f"no result: {json.dumps(resp)[:300]}"
    sc = result.get("structuredContent") or {}
    if abs(sc.get("length", -1) - (x * x + y * y) ** 0.5) > 1e-9 or sc.get("point") != {"x": x, "y": y}:
        return f"unexpected structuredContent: {json.dumps(sc)[:300]}"
    return None


def wl_pydantic(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, calls: int) -> None:
    print(f"== stdio warm Pydantic tools/call norm(p: Point) -> Result: {rounds} rounds x {calls} calls", flush=True)
    ok = {n: True for n in res.active}
    for n in res.active:  # the floor has no Pydantic; a baseline commit older than this workload has no such server
        if n == "floor":
            ok[n] = False
        elif not os.path.exists(sides[n].server_script("pydantic")):
            ok[n] = False
            res.notes.append(f"{n}: no servers/pydantic_{n}.py server; the Pydantic workload skips it")
    samples: dict[str, dict[str, list[float]]] = {s: {"rps": [], "lat": []} for s in res.active}
    points = [(float(i % 7), float(i % 5) + 0.5) for i in range(calls)]
    requests = [norm_line(i + 2, x, y) for i, (x, y) in enumerate(points)]

    def check(i: int, resp: dict) -> str | None:
        if i % 50 == 0 or i == calls - 1:  # every answer's structuredContent would cost the runner
            return check_norm(resp, i + 2, *points[i])
        return None if resp.get("id") == i + 2 and "result" in resp else json.dumps(resp)[:300]
    for r, _, name in interleaved(rounds, ok.get):
        with stdio_round(res, "stdio-pydantic", name, ok, sides[name], pin, kind="pydantic") as srv:
            srv.discover()
            for i in range(50):
                srv.send(norm_line(10_000_000 + i, 3.0, 4.0))
                err = check_norm(srv.recv(), 10_000_000 + i, 3.0, 4.0)
                if err:
                    raise RuntimeError(f"warm-up call {i}: {err}")
            elapsed, lat = sequential(srv, requests, check)
            rps = calls / elapsed
            samples[name]["rps"].append(rps)
            samples[name]["lat"].extend(lat)
            res.sample("pydantic.rps", name, r, rps)
            srv.close_stdin_and_wait(10)
    res.raw["stdio_pydantic"] = {n: {"rps": v["rps"]} for n, v in samples.items()}

    def lat(n: str, p: float) -> float | None:
        return ms(pct(samples[n]["lat"], p)) if n in samples and samples[n]["lat"] else None

    res.row_rounds("stdio Pydantic", f"norm(p: Point) -> Result tools/call, {calls} sequential (median of rounds)",
                   "req/s", "higher", "pydantic.rps")
    res.row("stdio Pydantic", "norm latency p50", "ms", "lower", {n: lat(n, 50) for n in SIDES})
    res.row("stdio Pydantic", "norm latency p99", "ms", "lower", {n: lat(n, 99) for n in SIDES})

