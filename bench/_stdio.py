"""Workloads over stdio: 2, cold start (spawn to the first ``server/discover`` answer, peak RSS,
exit after stdin EOF); 3, warm sequential ``tools/call``; 5, RSS idle and after many calls."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator

from _common import (
    ECHO_TEXT,
    REPO,
    SIDES,
    Pinning,
    Results,
    Side,
    discover_line,
    echo_line,
    kill,
    med,
    mib,
    ms,
    pct,
    proc_cpu_ns,
    proc_status,
    tail_file,
    wait_exit,
)
from _rounds import attempt, interleaved


class LineReader:
    """Read newline-terminated lines from a pipe fd with a timeout."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = bytearray()

    def readline(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[: i + 1])
                del self.buf[: i + 1]
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response line within {timeout:.0f} s")
            r, _, _ = select.select([self.fd], [], [], remaining)
            if not r:
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise EOFError("server closed stdout" + (f" (partial: {bytes(self.buf)[:200]!r})" if self.buf else ""))
            self.buf += chunk


class StdioServer:
    def __init__(self, side: Side, pin: Pinning, kind: str = "echo"):
        self.side = side
        self.stderr = tempfile.TemporaryFile()
        self.t_spawn = time.perf_counter()
        with pin.on_server_core():
            self.proc = subprocess.Popen(
                side.server_argv("stdio", kind=kind),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                env=side.env,
                cwd=str(REPO),
                bufsize=0,
            )
        self.wfd = self.proc.stdin.fileno()
        self.reader = LineReader(self.proc.stdout.fileno())

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.wfd, view)
            view = view[n:]

    def recv(self, timeout: float = 30) -> dict:
        return json.loads(self.reader.readline(timeout))

    def discover(self, timeout: float = 60) -> dict:
        self.send(discover_line(1))
        resp = self.recv(timeout)
        if resp.get("id") != 1 or "result" not in resp:
            raise RuntimeError(f"server/discover did not return a result: {json.dumps(resp)[:300]}")
        return resp

    def close_stdin_and_wait(self, timeout: float = 10) -> float | None:
        self.proc.stdin.close()
        return wait_exit(self.proc, timeout)

    def cleanup(self) -> None:
        kill(self.proc)
        for f in (self.proc.stdout, self.proc.stdin):
            try:
                f.close()
            except Exception:
                pass

    def diag(self) -> str:
        t = tail_file(self.stderr)
        return f"\nserver stderr:\n{t}" if t else ""


def check_echo(resp: dict, req_id: int, text: str = ECHO_TEXT) -> str | None:
    if resp.get("id") != req_id:
        return f"id {resp.get('id')!r} != {req_id}"
    result = resp.get("result")
    if not isinstance(result, dict):
        return f"no result: {json.dumps(resp)[:300]}"
    if result.get("isError"):
        return f"isError: {json.dumps(result)[:300]}"
    content = result.get("content") or []
    if not content or content[0].get("type") != "text" or content[0].get("text") != text:
        return f"unexpected content: {json.dumps(content)[:300]}"
    return None


@contextlib.contextmanager
def stdio_round(res: Results, workload: str, name: str, ok: dict[str, bool], side: Side,
                pin: Pinning, kind: str = "echo") -> Iterator[StdioServer]:
    """A fresh stdio server of ``side`` (its ``kind`` server) for one round's measurement: a
    failure is recorded (with the server's stderr) and ends that side's rounds; the server is
    always cleaned up."""
    srv = StdioServer(side, pin, kind)
    try:
        with attempt(res, workload, name, ok, srv.diag):
            yield srv
    finally:
        srv.cleanup()


def sequential(srv: StdioServer, requests: list[bytes],
               check: Callable[[int, dict], str | None]) -> tuple[float, list[float]]:
    """Send ``requests`` one after the other, each once the last is answered: (seconds in all,
    each call's latency). ``check(i, response)`` says what is wrong with an answer (None: right)."""
    lat = []
    send, readline, loads, now = srv.send, srv.reader.readline, json.loads, time.perf_counter
    t_start = now()
    for i, line in enumerate(requests):
        t0 = now()
        send(line)
        resp = loads(readline(30))
        lat.append(now() - t0)
        err = check(i, resp)
        if err:
            raise RuntimeError(f"call {i}: {err}")
    return now() - t_start, lat


# --------------------------------------------------------------------------- workload 2: stdio cold


def wl_cold(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int) -> None:
    print(f"== stdio cold server/discover: {rounds} rounds", flush=True)
    samples = {s: {"discover": [], "peak_rss": [], "rss_after_discover": [], "exit": [], "exit_code": []} for s in res.active}
    ok = {n: True for n in res.active}
    for r, _, name in interleaved(rounds, ok.get):
        with stdio_round(res, "stdio-cold", name, ok, sides[name], pin) as srv:
            srv.send(discover_line(1))
            resp = srv.recv(60)
            t_resp = time.perf_counter()
            if resp.get("id") != 1 or "result" not in resp:
                raise RuntimeError(f"server/discover did not return a result: {json.dumps(resp)[:300]}")
            st = proc_status(srv.proc.pid)
            exit_s = srv.close_stdin_and_wait(10)
            if exit_s is None:
                raise RuntimeError("did not exit within 10 s of stdin EOF")
            s = samples[name]
            s["discover"].append(t_resp - srv.t_spawn)
            s["peak_rss"].append(st.get("VmHWM", 0))
            s["rss_after_discover"].append(st.get("VmRSS", 0))
            s["exit"].append(exit_s)
            s["exit_code"].append(srv.proc.returncode)
            res.sample("cold.discover", name, r, t_resp - srv.t_spawn)
            res.sample("cold.exit", name, r, exit_s)
    res.raw["stdio_cold"] = samples
    for n in res.active:
        codes = set(samples[n]["exit_code"])
        if codes - {0}:
            res.notes.append(f"{n}: stdio server exit codes after stdin EOF: {sorted(codes)}")

    def m(name, key):
        return med(samples[name][key]) if name in samples else None

    res.row_rounds("stdio cold", "spawn → server/discover response (median)", "ms", "lower", "cold.discover", 1e3)
    res.row("stdio cold", "peak RSS of server (VmHWM after discover)", "MiB", "lower", {n: mib(m(n, "peak_rss")) for n in SIDES})
    res.row_rounds("stdio cold", "exit after stdin EOF (median)", "ms", "lower", "cold.exit", 1e3)


# --------------------------------------------------------------------------- workload 3: stdio warm


def wl_warm(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, calls: int) -> None:
    print(f"== stdio warm tools/call: {rounds} rounds x {calls} sequential calls", flush=True)
    samples = {s: {"rps": [], "lat": []} for s in res.active}
    ok = {n: True for n in res.active}
    requests = [echo_line(i) for i in range(2, calls + 2)]
    warmup = [echo_line(10_000_000 + i) for i in range(50)]
    for r, _, name in interleaved(rounds, ok.get):
        with stdio_round(res, "stdio-warm", name, ok, sides[name], pin) as srv:
            srv.discover()
            for i, line in enumerate(warmup):
                srv.send(line)
                err = check_echo(srv.recv(), 10_000_000 + i)
                if err:
                    raise RuntimeError(f"warm-up call {i}: {err}")
            cpu0 = proc_cpu_ns(srv.proc.pid)
            elapsed, lat = sequential(srv, requests, lambda i, resp: check_echo(resp, i + 2))
            cpu1 = proc_cpu_ns(srv.proc.pid)
            samples[name]["rps"].append(calls / elapsed)
            res.sample("warm.rps", name, r, calls / elapsed)
            if cpu0 is not None and cpu1 is not None:
                res.sample("warm.cpu", name, r, (cpu1 - cpu0) / 1e3 / calls)
            samples[name]["lat"].extend(lat)
            srv.close_stdin_and_wait(10)
    res.raw["stdio_warm"] = {
        n: {"rps": v["rps"], "p50_ms": ms(pct(v["lat"], 50)) if v["lat"] else None, "p99_ms": ms(pct(v["lat"], 99)) if v["lat"] else None}
        for n, v in samples.items()
    }

    def lat(n, p):
        return ms(pct(samples[n]["lat"], p)) if n in samples and samples[n]["lat"] else None

    res.row_rounds("stdio warm", f"echo tools/call, {calls} sequential (median of rounds)", "req/s", "higher", "warm.rps")
    res.row_rounds("stdio warm", "server CPU per call", "µs", "lower", "warm.cpu")
    res.row("stdio warm", "echo latency p50", "ms", "lower", {n: lat(n, 50) for n in SIDES})
    res.row("stdio warm", "echo latency p99", "ms", "lower", {n: lat(n, 99) for n in SIDES})


# --------------------------------------------------------------------------- workload 5: RSS


def wl_rss(res: Results, sides: dict[str, Side], pin: Pinning, rounds: int, n_requests: int, window: int = 16) -> None:
    print(f"== RSS: idle after discover, then after {n_requests} echo calls (window {window}), {rounds} rounds", flush=True)
    samples = {s: {"idle": [], "after": [], "hwm": []} for s in res.active}
    ok = {n: True for n in res.active}
    for _, _, name in interleaved(rounds, ok.get):
        with stdio_round(res, "rss", name, ok, sides[name], pin) as srv:
            srv.discover()
            time.sleep(0.3)  # let start-up work settle
            idle = proc_status(srv.proc.pid).get("VmRSS", 0)
            sent = done = 0
            pending = set()
            while done < n_requests:
                while sent < n_requests and len(pending) < window:
                    srv.send(echo_line(sent + 2))
                    pending.add(sent + 2)
                    sent += 1
                resp = srv.recv(30)
                rid = resp.get("id")
                if rid not in pending:
                    raise RuntimeError(f"unexpected response id {rid!r}")
                pending.discard(rid)
                err = check_echo(resp, rid)
                if err:
                    raise RuntimeError(err)
                done += 1
            time.sleep(0.3)
            st = proc_status(srv.proc.pid)
            samples[name]["idle"].append(idle)
            samples[name]["after"].append(st.get("VmRSS", 0))
            samples[name]["hwm"].append(st.get("VmHWM", 0))
            srv.close_stdin_and_wait(10)
    res.raw["rss"] = samples

    def m(n, k):
        return mib(med(samples[n][k])) if n in samples and samples[n][k] else None

    res.row("RSS", "stdio server idle, after discover", "MiB", "lower", {n: m(n, "idle") for n in SIDES})
    res.row("RSS", f"stdio server after {n_requests:,} echo calls", "MiB", "lower", {n: m(n, "after") for n in SIDES})
