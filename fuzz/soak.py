"""Soak an MCP server: many calls over stdio and HTTP, listen streams opened and dropped.

    PYTHONPATH=. python fuzz/soak.py            # full: 1,000,000 stdio calls, 200,000 HTTP calls
                                                 # on 32 connections, 200 listen streams
    PYTHONPATH=. python fuzz/soak.py --quick    # 20,000 / 5,000 on 8 connections / 20
    PYTHONPATH=. python fuzz/soak.py --stdio 100000 --http 50000 --connections 32 --listens 200

The server is ``examples/demo.py`` (``--server FILE.py`` for another; it must answer the
demo's calls). Calls mix tools/list, tools/call (add, convert_temperature, count_down), the
resource, prompt and completion methods, plus a share (``--errors``) of requests answered
with errors (bad params, unknown methods, lone surrogates, bad UTF-8, deep nesting). Every
request has a unique id and a bounded number are in flight (``--window``).

Reported per phase: answered, lost (never answered), duplicated, misrouted (HTTP: the body
of another request), 5xx, latency p50/p99/p99.9/max, calls per second, and the server's
RSS over time. Listen phase: streams acknowledged, then dropped; the server must still
answer and its RSS must settle. Exit status 0 when nothing was lost, duplicated or 5xx.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import threading
import time
from array import array
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _frames import LIMIT, META, VALID, VERSION  # noqa: E402
from http_fuzz import http_server  # noqa: E402
from stdio_fuzz import server_env  # noqa: E402

_decode = msgspec.json.Decoder().decode
_META_JSON = json.dumps(META, separators=(",", ":"))


# ====================================================================== calls
def templates(errors: float, seed: int = 1) -> list[tuple[str, str | None, bytes, bytes]]:
    """(method, name header, frame head, frame tail): the frame is head + id + tail."""
    out = []
    for method, params in VALID:
        body = json.dumps({"_meta": META, **params}, separators=(",", ":"))
        name = params.get("name") or params.get("uri")
        out.append((method, name, f'{{"jsonrpc":"2.0","method":"{method}","params":{body},"id":'.encode(), b"}"))
    deep = "[" * (LIMIT + 1) + "]" * (LIMIT + 1)
    bad = [  # every one is answered with an error that carries its id
        ("tools/call", "add", f'{{"_meta":{_META_JSON},"name":"add","arguments":{{"a":"x","b":2}}}}'),
        ("tools/nope", None, f'{{"_meta":{_META_JSON}}}'),
        ("tools/list", None, '{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}'),
        ("tools/list", None, f'{{"_meta":{_META_JSON},"x":"\\ud800"}}'),
        ("tools/list", None, f'{{"_meta":{_META_JSON},"x":{deep}}}'),
        ("tools/list", None, f'{{"_meta":{_META_JSON},"x":"\xff"}}'),
    ]
    errs = [(m, n, f'{{"jsonrpc":"2.0","method":"{m}","params":{p},"id":'.encode("latin-1"), b"}") for m, n, p in bad]
    # Weighted: about ``errors`` of the calls are error cases.
    weight_ok = max(1, round(len(errs) * (1 - errors) / max(errors, 1e-9) / len(out))) if errors > 0 else 1
    mixed = out * weight_ok + (errs if errors > 0 else [])
    random.Random(seed).shuffle(mixed)
    return mixed


def percentiles(lat: array, n: int) -> dict[str, float]:
    vals = sorted(lat[:n])
    if not vals:
        return {}

    def p(q: float) -> float:
        return round(vals[min(len(vals) - 1, int(q * len(vals)))] * 1000, 3)

    return {"p50_ms": p(0.50), "p99_ms": p(0.99), "p999_ms": p(0.999), "max_ms": round(vals[-1] * 1000, 3)}


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


class RssSampler(threading.Thread):
    def __init__(self, pid: int, progress: Any, every: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pid, self.progress, self.every = pid, progress, every
        self.samples: list[tuple[float, int, int]] = []  # (seconds, calls done, RSS KiB)
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((round(time.monotonic() - self.t0, 1), self.progress(), rss_kb(self.pid)))
            self.stop.wait(self.every)

    def finish(self) -> list[tuple[float, int, int]]:
        self.stop.set()
        self.join(5)
        self.samples.append((round(time.monotonic() - self.t0, 1), self.progress(), rss_kb(self.pid)))
        return self.samples


def thin(samples: list[tuple[float, int, int]], keep: int = 12) -> list[dict[str, Any]]:
    if len(samples) > keep:
        step = (len(samples) - 1) / (keep - 1)
        samples = [samples[round(i * step)] for i in range(keep)]
    return [{"s": s, "calls": c, "rss_mb": round(r / 1024, 1)} for s, c, r in samples]


# ====================================================================== stdio
def soak_stdio(calls: int, *, window: int, errors: float, script: Path, verbose: bool) -> dict[str, Any]:
    tpl = templates(errors)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=str(ROOT), env=server_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=1 << 16)
    assert proc.stdin is not None and proc.stdout is not None
    sent_at = array("d", bytes(8 * calls))
    latency = array("d", bytes(8 * calls))
    answers = bytearray(calls)
    slots = threading.Semaphore(window)
    state = {"answered": 0, "duplicates": 0, "unknown": 0, "errors": 0, "bad_lines": 0}

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            now = time.perf_counter()
            try:
                msg = _decode(line)
                rid = msg.get("id") if type(msg) is dict else None
            except msgspec.DecodeError:
                state["bad_lines"] += 1
                continue
            if "method" in msg:
                continue  # progress notifications
            if type(rid) is not int or not 0 <= rid < calls:
                state["unknown"] += 1
                continue
            if answers[rid]:
                state["duplicates"] += 1
                continue
            answers[rid] = 1
            latency[state["answered"]] = now - sent_at[rid]
            state["answered"] += 1
            if "error" in msg:
                state["errors"] += 1
            slots.release()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # Warm up: the first call waits for the server to start; it is not timed.
    warm = b'{"jsonrpc":"2.0","id":"warm-up","method":"tools/list","params":{"_meta":%s}}\n' % _META_JSON.encode()
    slots.acquire()
    proc.stdin.write(warm)
    proc.stdin.flush()
    while state["unknown"] == 0 and proc.poll() is None:
        time.sleep(0.01)
    state["unknown"] -= 1
    slots.release()
    sampler = RssSampler(proc.pid, lambda: state["answered"])
    sampler.start()
    t0 = time.perf_counter()
    write = proc.stdin.write
    n_tpl = len(tpl)
    try:
        for i in range(calls):
            if not slots.acquire(timeout=60):
                break  # answers stopped coming: counted as lost below
            _, _, head, tail = tpl[i % n_tpl]
            sent_at[i] = time.perf_counter()
            write(head + str(i).encode() + tail + b"\n")
            if i % 64 == 63 or i == calls - 1:
                proc.stdin.flush()
            if verbose and i % 100_000 == 99_999:
                print(f"  stdio {i + 1} sent, {time.perf_counter() - t0:.0f}s, RSS {rss_kb(proc.pid) // 1024} MiB",
                      file=sys.stderr)
        proc.stdin.flush()
    except (BrokenPipeError, OSError):
        pass
    deadline = time.monotonic() + 60
    while state["answered"] < calls and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    elapsed = time.perf_counter() - t0
    samples = sampler.finish()
    try:
        proc.stdin.close()
    except OSError:
        pass
    code = proc.wait(60)
    reader.join(10)
    return {
        "calls": calls, "answered": state["answered"], "lost": calls - sum(answers), "duplicated": state["duplicates"],
        "unknown_ids": state["unknown"], "bad_lines": state["bad_lines"], "error_answers": state["errors"],
        "exit_code": code, "seconds": round(elapsed, 1), "calls_per_s": round(state["answered"] / elapsed),
        **percentiles(latency, state["answered"]), "window": window, "rss": thin(samples),
        "rss_mb_start_max_end": [round(x / 1024, 1) for x in (samples[0][2], max(s[2] for s in samples), samples[-1][2])],
    }


# ====================================================================== HTTP
class Conn:
    """One keep-alive HTTP/1.1 connection, raw: a request out, a response in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Conn:
        r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        return cls(r, w)

    async def exchange(self, data: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        self.writer.write(data)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        hdrs = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(b":")
                hdrs[k.strip().lower()] = v.strip()
        if b"content-length" in hdrs:
            body = await self.reader.readexactly(int(hdrs[b"content-length"]))
        elif hdrs.get(b"transfer-encoding", b"").lower() == b"chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            body = b"".join(parts)
        else:
            body = b""
        return status, hdrs, body

    def close(self) -> None:
        self.writer.close()


def http_request(port: int, method: str, name: str | None, body: bytes, accept: bytes = b"application/json") -> bytes:
    hdrs = [b"POST /mcp HTTP/1.1", b"Host: 127.0.0.1:%d" % port, b"Content-Type: application/json", b"Accept: " + accept,
            b"MCP-Protocol-Version: " + VERSION.encode(), b"Mcp-Method: " + method.encode()]
    if name is not None:
        hdrs.append(b"Mcp-Name: " + name.encode())
    hdrs.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(hdrs) + b"\r\n\r\n" + body


async def _http_calls(port: int, calls: int, connections: int, errors: float, latency: array,
                      state: dict[str, Any]) -> None:
    tpl = templates(errors, seed=2)
    counter = iter(range(calls))

    async def worker() -> None:
        conn = await Conn.open(port)
        try:
            for i in counter:
                method, name, head, tail = tpl[i % len(tpl)]
                data = http_request(port, method, name, head + str(i).encode() + tail)
                t = time.perf_counter()
                try:
                    status, hdrs, body = await asyncio.wait_for(conn.exchange(data), 60)
                except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    state["lost"] += 1
                    state["failures"].append(f"{type(exc).__name__} on call {i}")
                    conn.close()
                    conn = await Conn.open(port)
                    continue
                latency[state["answered"]] = time.perf_counter() - t
                state["answered"] += 1
                state["statuses"][status] = state["statuses"].get(status, 0) + 1
                if status >= 500:
                    state["5xx"] += 1
                    state["failures"].append(f"HTTP {status} on call {i}: {body[:200]!r}")
                    continue
                try:
                    msg = _decode(body)
                except msgspec.DecodeError:
                    state["bad_bodies"] += 1
                    continue
                rid = msg.get("id") if type(msg) is dict else None
                if rid is None:
                    state["null_ids"] += 1  # every call here has a readable id
                elif rid != i:
                    state["misrouted"] += 1
        finally:
            conn.close()

    await asyncio.gather(*(worker() for _ in range(connections)))


async def _listens(port: int, count: int, concurrency: int, state: dict[str, Any]) -> None:
    body_tpl = ('{"jsonrpc":"2.0","id":"listen-%d","method":"subscriptions/listen","params":{"_meta":'
                + _META_JSON + ',"notifications":{"toolsListChanged":true,"resourcesListChanged":true}}}')
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            try:
                w.write(http_request(port, "subscriptions/listen", None, (body_tpl % i).encode(),
                                     accept=b"application/json, text/event-stream"))
                head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 30)
                if b" 200 " not in head.split(b"\r\n", 1)[0] or b"text/event-stream" not in head:
                    state["listen_failed"] += 1
                    return
                got = b""
                while b"notifications/subscriptions/acknowledged" not in got:
                    chunk = await asyncio.wait_for(r.read(65536), 30)
                    if not chunk:
                        break
                    got += chunk
                if b"notifications/subscriptions/acknowledged" in got:
                    state["listen_acked"] += 1
                else:
                    state["listen_failed"] += 1
            except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                state["listen_failed"] += 1
            finally:
                w.transport.abort()  # dropped: no goodbye, the way a crashed client goes

    await asyncio.gather(*(one(i) for i in range(count)))


async def _subscriptions_left(port: int, wait: float = 10.0) -> int | str:
    """The server's open subscriptions once the drops are noticed, when it has a ``bus_size``
    tool (tests/servers/listen_server.py does); "unknown" otherwise."""
    body = ('{"jsonrpc":"2.0","id":"bus","method":"tools/call","params":{"_meta":' + _META_JSON
            + ',"name":"bus_size","arguments":{}}}').encode()
    deadline = time.monotonic() + wait
    conn = await Conn.open(port)
    try:
        while True:
            _, _, raw = await conn.exchange(http_request(port, "tools/call", "bus_size", body))
            result = _decode(raw).get("result") or {}
            if result.get("isError") or "structuredContent" not in result:
                return "unknown"
            left = int(result["structuredContent"]["result"])
            if left == 0 or time.monotonic() > deadline:
                return left
            await asyncio.sleep(0.1)
    finally:
        conn.close()


def soak_http(calls: int, connections: int, listens: int, *, errors: float, script: Path, verbose: bool) -> dict[str, Any]:
    try:
        import uvloop

        loop_factory: Any = uvloop.new_event_loop
    except ImportError:  # pragma: no cover
        loop_factory = asyncio.new_event_loop
    with http_server(script) as (url, proc, _err):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        latency = array("d", bytes(8 * max(calls, 1)))
        state: dict[str, Any] = {"answered": 0, "lost": 0, "5xx": 0, "misrouted": 0, "null_ids": 0, "bad_bodies": 0,
                                 "statuses": {}, "failures": [], "listen_acked": 0, "listen_failed": 0}
        sampler = RssSampler(proc.pid, lambda: state["answered"])
        sampler.start()
        loop = loop_factory()
        t0 = time.perf_counter()
        try:
            loop.run_until_complete(_http_calls(port, calls, connections, errors, latency, state))
            elapsed = time.perf_counter() - t0
            rss_before_listens = rss_kb(proc.pid)
            t1 = time.perf_counter()
            loop.run_until_complete(_listens(port, listens, min(listens, 50), state))
            listen_seconds = time.perf_counter() - t1
            left = loop.run_until_complete(_subscriptions_left(port))
            # Still serving, promptly, after the drops:
            check = array("d", bytes(8 * 200))
            after: dict[str, Any] = {**state, "answered": 0, "lost": 0, "5xx": 0, "misrouted": 0, "failures": [],
                                     "statuses": {}}
            loop.run_until_complete(_http_calls(port, 200, 4, 0.0, check, after))
        finally:
            loop.close()
        samples = sampler.finish()
        up = proc.poll() is None
    return {
        "calls": calls, "connections": connections, "answered": state["answered"], "lost": state["lost"],
        "http_5xx": state["5xx"], "misrouted": state["misrouted"], "unexpected_null_ids": state["null_ids"],
        "bad_bodies": state["bad_bodies"], "statuses": dict(sorted(state["statuses"].items())),
        "seconds": round(elapsed, 1), "calls_per_s": round(state["answered"] / elapsed) if elapsed else 0,
        **percentiles(latency, state["answered"]), "failures": state["failures"][:5],
        "listens": {"opened": listens, "acknowledged": state["listen_acked"], "failed": state["listen_failed"],
                    "seconds": round(listen_seconds, 1), "subscriptions_left": left,
                    "rss_mb_before_after": [round(rss_before_listens / 1024, 1), round(samples[-1][2] / 1024, 1)],
                    "after_drops": {"answered": after["answered"], "lost": after["lost"], "http_5xx": after["5xx"],
                                    **percentiles(check, after["answered"])}},
        "server_up_at_end": up, "rss": thin(samples),
        "rss_mb_start_max_end": [round(x / 1024, 1) for x in (samples[0][2], max(s[2] for s in samples), samples[-1][2])],
    }


# ====================================================================== main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small counts: 20,000 stdio, 5,000 HTTP on 8 connections, 20 listens")
    ap.add_argument("--stdio", type=int, help="stdio calls (default 1,000,000)")
    ap.add_argument("--http", type=int, help="HTTP calls (default 200,000)")
    ap.add_argument("--connections", type=int, help="HTTP connections (default 32)")
    ap.add_argument("--listens", type=int, help="listen streams opened and dropped (default 200)")
    ap.add_argument("--window", type=int, default=256, help="stdio requests in flight (default 256)")
    ap.add_argument("--errors", type=float, default=0.05, help="share of calls answered with errors (default 0.05)")
    ap.add_argument("--server", type=Path, default=ROOT / "examples" / "demo.py")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    quick = args.quick
    stdio_calls = args.stdio if args.stdio is not None else (20_000 if quick else 1_000_000)
    http_calls = args.http if args.http is not None else (5_000 if quick else 200_000)
    connections = args.connections or (8 if quick else 32)
    listens = args.listens if args.listens is not None else (20 if quick else 200)
    report: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    if stdio_calls:
        report["stdio"] = soak_stdio(stdio_calls, window=args.window, errors=args.errors, script=args.server,
                                     verbose=args.verbose)
        print("stdio:", json.dumps(report["stdio"]), file=sys.stderr)
    if http_calls or listens:
        report["http"] = soak_http(http_calls, connections, listens, errors=args.errors, script=args.server,
                                   verbose=args.verbose)
        print("http:", json.dumps(report["http"]), file=sys.stderr)
    s, h = report.get("stdio", {}), report.get("http", {})
    ok = (s.get("lost", 0) == 0 and s.get("duplicated", 0) == 0 and s.get("unknown_ids", 0) == 0
          and s.get("bad_lines", 0) == 0 and s.get("exit_code", 0) == 0
          and h.get("lost", 0) == 0 and h.get("http_5xx", 0) == 0 and h.get("misrouted", 0) == 0
          and h.get("unexpected_null_ids", 0) == 0 and h.get("bad_bodies", 0) == 0 and h.get("server_up_at_end", True)
          and (not h or h["listens"]["failed"] == 0 and h["listens"]["after_drops"]["lost"] == 0))
    report["ok"] = ok
    print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
