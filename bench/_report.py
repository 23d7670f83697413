"""The report: the markdown table (values, ratio, advantage), the budget verdicts, the files
under bench/results, and the README's results section."""

from __future__ import annotations

import json
import re
import statistics

from _common import BENCH, OFFICIAL_SPEC, Results


def fmt(v, unit: str) -> str:
    if v is None:
        return "n/a"
    if unit == "count":
        return f"{int(v)}"
    if unit == "req/s":
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def round_ratios(row, a: str, b: str) -> list[float]:
    """``a ÷ b`` round by round (the rounds both sides measured), or the one ratio of the medians
    when the row has no per-round values."""
    ra, rb = (row.get("rounds") or {}).get(a), (row.get("rounds") or {}).get(b)
    if ra and rb:
        return [ra[r] / rb[r] for r in ra if r in rb and rb[r]]
    va, vb = row.get(a), row.get(b)
    return [va / vb] if va is not None and vb else []


def spread(values: list[float]) -> str:
    """The median, with the range (min-max) when there is more than one value."""
    if not values:
        return ""
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:.3g}"
    return f"{mid:.3g} ({min(values):.3g}-{max(values):.3g})"


def advantage_cell(row, other: str) -> str:
    """How many times better mcpkit is than ``other``: the median of per-round ratios
    (``other ÷ mcpkit`` for times and sizes, ``mcpkit ÷ other`` for throughput), with its spread."""
    if row["unit"] == "count":
        return ""
    ratios = round_ratios(row, "mcpkit", other)
    adv = [x if row["better"] == "higher" else 1 / x for x in ratios if x]
    return spread(adv) + ("×" if adv else "")


def floor_cell(row) -> str:
    """mcpkit ÷ floor, per round: the fraction of the floor's throughput (target ≥ 0.8), or how
    many times the floor's time or CPU."""
    return "" if row["unit"] == "count" else spread(round_ratios(row, "mcpkit", "floor"))


def ratio_stats(res: Results, workload: str, metric_start: str, other: str) -> list[float]:
    for row in res.rows:
        if row["workload"] == workload and row["metric"].startswith(metric_start):
            return round_ratios(row, "mcpkit", other)
    return []


def budgets(res: Results, c16: int, c64: int) -> list[tuple[str, str, str]]:
    http_c16, http_c64 = f"HTTP echo tools/call c={c16}", f"HTTP echo tools/call c={c64}"
    out = []

    def add(label, value, ok, shown):
        out.append((label, shown if value is not None else "n/a", "n/a" if value is None else ("PASS" if ok else "MISS")))

    v = res.get("import", "import + one-tool server, wall above bare python", "mcpkit")
    add("import + one-tool server ≤ 50 ms wall above bare python", v, v is not None and v <= 50, f"{fmt(v, 'ms')} ms")
    v = res.get("stdio cold", "spawn → server/discover response (median)", "mcpkit")
    add("stdio cold discover ≤ 50 ms", v, v is not None and v <= 50, f"{fmt(v, 'ms')} ms")
    a = res.get("stdio warm", next((r["metric"] for r in res.rows if r["workload"] == "stdio warm" and r["unit"] == "req/s"), ""), "mcpkit")
    b = res.get("stdio warm", next((r["metric"] for r in res.rows if r["workload"] == "stdio warm" and r["unit"] == "req/s"), ""), "official")
    v = a / b if a and b else None
    add("stdio warm echo ≥ 5× official req/s", v, v is not None and v >= 5, f"{v:.2f}×" if v else "")
    a, b = res.get(http_c16, "throughput", "mcpkit"), res.get(http_c16, "throughput", "official")
    v = a / b if a and b else None
    add(f"HTTP echo c={c16} ≥ 8× official req/s", v, v is not None and v >= 8, f"{v:.2f}×" if v else "")
    v = res.get(http_c16, "server CPU per request", "mcpkit")
    add(f"server CPU per HTTP call (echo, c={c16}) ≤ 100 µs", v, v is not None and v <= 100, f"{fmt(v, 'µs')} µs")
    a, b = res.get(http_c64, "latency p99", "mcpkit"), res.get(http_c64, "latency p99", "official")
    v = a / b if a and b else None
    add(f"HTTP echo p99 at c={c64} ≤ 1/5 official", v, v is not None and v <= 0.2, f"{v:.3f}× official ({fmt(a, 'ms')} vs {fmt(b, 'ms')} ms)" if v else "")
    v = res.get("RSS", "stdio server idle, after discover", "mcpkit")
    add("RSS idle (stdio) ≤ 25 MiB", v, v is not None and v <= 25, f"{fmt(v, 'MiB')} MiB")
    v = res.get("stdio cold", "exit after stdin EOF (median)", "mcpkit")
    add("exit after stdin EOF ≤ 20 ms", v, v is not None and v <= 20, f"{fmt(v, 'ms')} ms")
    # Against the floors (issue 24): medians of per-round ratios.
    for label, (workload, metric), target, higher in (
        ("stdio warm echo ≥ 0.8 of the floor server", ("stdio warm", "echo tools/call"), 0.8, True),
        ("client calls/s ≥ 0.8 of the bare driver", ("client", "tools/call against"), 0.8, True),
        (f"HTTP echo c={c16} ≥ 0.8 of the bare ASGI app", (http_c16, "throughput"), 0.8, True),
        ("stdio cold discover ≤ 2× the floor server", ("stdio cold", "spawn"), 2.0, False),
    ):
        ratios = ratio_stats(res, workload, metric, "floor")
        v = statistics.median(ratios) if ratios else None
        add(label, v, v is not None and (v >= target if higher else v <= target), spread(ratios) + ("×" if not higher else ""))
    # The same client target with the Client on uvloop (the application's choice of loop), each
    # round's uvloop figure over that round's synchronous driver (information beside the target).
    sync = next((r for r in res.rows if r["workload"] == "client" and r["metric"].startswith("tools/call against")), None)
    uv = next((r for r in res.rows if r["workload"] == "client" and r["metric"].startswith("on uvloop")), None)
    if sync is not None and uv is not None:
        ratios = round_ratios({"rounds": {"mcpkit": (uv.get("rounds") or {}).get("mcpkit"),
                                          "floor": (sync.get("rounds") or {}).get("floor")},
                               "mcpkit": uv.get("mcpkit"), "floor": sync.get("floor")}, "mcpkit", "floor")
        v = statistics.median(ratios) if ratios else None
        add("client on uvloop: calls/s ≥ 0.8 of the bare driver", v, v is not None and v >= 0.8, spread(ratios))
    v = res.get("import", "`from mcpkit import Client`, in-process, above", "mcpkit")
    add("`from mcpkit import Client` ≤ 15 ms above `import asyncio, msgspec`", v, v is not None and v <= 15, f"{fmt(v, 'ms')} ms")
    return out


def render(res: Results, info: dict, params: dict, budget_rows) -> str:
    lines = [
        f"## mcpkit vs official MCP Python SDK ({OFFICIAL_SPEC})",
        "",
        f"- date: {info['date']}" + (f"; mcpkit commit {info['mcpkit_commit']}" if info.get("mcpkit_commit") else ""),
        f"- machine: {info['nproc']} CPUs, {info['cpu']}, Linux {info['kernel']}",
        f"- python: mcpkit {info.get('python_mcpkit', '?')}, official {info.get('python_official', '?')}"
        + (f"; {info['wrk']}" if info.get("wrk") else ""),
        "- parameters: " + ", ".join(f"{k}={v}" for k, v in params.items()),
        "- ratio = mcpkit ÷ official; advantage = how many times better mcpkit is (>1 = mcpkit better)",
        "",
    ]
    base = info.get("baseline_commit")
    sides = ["mcpkit"] + (["baseline"] if base else []) + ["official", "floor"]
    if base:
        lines[-1:-1] = [f"- baseline = mcpkit at {base}, measured in the same interleaved rounds; "
                        "vs baseline = how many times better this checkout is than the baseline (>1 = better)"]
    lines[-1:-1] = [
        "- floor = the bare-Python peer in the same rounds (stdio: a stdlib-json line server; HTTP: a bare ASGI "
        "app on the same uvicorn stack; client: a bare JSON-lines driver; imports: the bare imports); "
        "÷ floor = mcpkit ÷ floor (throughput: the fraction of the floor reached; times: how many times the floor's)",
        "- ratios are medians of per-round ratios, with their spread (min-max) in brackets",
    ]
    head = "| workload | metric | unit | " + " | ".join(sides) + " | vs official |" + (" vs baseline |" if base else "") + " ÷ floor |"
    lines += [head, "| --- | --- | --- |" + " ---: |" * (len(sides) + 2 + bool(base))]
    for row in res.rows:
        unit = row["unit"]
        values = " | ".join(fmt(row.get(s), unit) for s in sides)
        tail = f" {advantage_cell(row, 'official')} |" + (f" {advantage_cell(row, 'baseline')} |" if base else "")
        lines.append(f"| {row['workload']} | {row['metric']} | {unit} | {values} |{tail} {floor_cell(row)} |")
    lines += ["", "### Budgets (mcpkit)", "", "| budget | measured | verdict |", "| --- | --- | --- |"]
    for label, shown, verdict in budget_rows:
        lines.append(f"| {label} | {shown} | {verdict} |")
    if res.notes or res.errors:
        lines += ["", "### Notes", ""]
        lines += [f"- {n}" for n in res.notes]
        lines += [f"- ERROR {e.splitlines()[0]}" for e in res.errors]
    return "\n".join(lines) + "\n"


def update_readme(table: str) -> None:
    readme = BENCH / "README.md"
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    text = readme.read_text()
    if start not in text or end not in text:
        print("README.md has no results markers; not updated")
        return
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    table = re.sub(r"^(#+) ", r"#\1 ", table, flags=re.M)  # nest under "## Latest results"
    readme.write_text(f"{head}{start}\n{table}{end}{tail}")
    print("updated bench/README.md")


def write_results(out_name: str, table: str, info: dict, params: dict, elapsed: float, res: Results,
                  budget_rows: list[tuple[str, str, str]]) -> None:
    """``bench/results/OUT.md`` (the table) and ``OUT.json`` (everything, raw samples included)."""
    results_dir = BENCH / "results"
    results_dir.mkdir(exist_ok=True)
    (results_dir / f"{out_name}.md").write_text(table)
    (results_dir / f"{out_name}.json").write_text(
        json.dumps(
            {
                "machine": info,
                "parameters": params,
                "elapsed_s": round(elapsed, 1),
                "rows": res.rows,
                "budgets": [{"budget": b, "measured": m, "verdict": v} for b, m, v in budget_rows],
                "notes": res.notes,
                "errors": res.errors,
                "raw": res.raw,
            },
            indent=1,
            default=str,
        )
        + "\n"
    )
    print(f"wrote bench/results/{out_name}.md and .json")
