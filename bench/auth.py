"""The cost of protection: HTTP ``tools/call`` throughput and latency of the echo server
unprotected, behind a JWT-protected ``ResourceServerAuth`` (cached JWKS), and with
DPoP-bound tokens (a fresh proof per request), in one run, modes interleaved round by round.

    python bench/auth.py [--duration 5] [--rounds 3] [--connections 16] [--no-pin]

Server and wrk are pinned to different cores (when there are two). Prints a markdown table
(medians over rounds) and writes it to bench/results/auth.md; also measures in process the
verification cost per request (µs) of each path. Needs wrk, joserfc and uvicorn.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from _common import CLK_TCK, REPO, Pinning, free_port, kill, proc_cpu_ticks  # noqa: E402

ISSUER = "https://issuer.bench"
LUA = BENCH / "wrk" / "mcp_auth.lua"
MODES = ("none", "jwt", "dpop")
LABEL = {"none": "unprotected", "jwt": "JWT (cached JWKS)", "dpop": "JWT + DPoP proof"}


def b64u(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Keys:
    def __init__(self) -> None:
        from joserfc.jwk import ECKey

        self.issuer_key = ECKey.generate_key("P-256", parameters={"kid": "bench", "alg": "ES256", "use": "sig"},
                                             private=True)
        self.client_key = ECKey.generate_key("P-256", private=True)
        self.jwks = {"keys": [self.issuer_key.as_dict(private=False)]}

    def token(self, aud: str, bound: bool) -> str:
        from joserfc import jwt

        now = int(time.time())
        claims = {"iss": ISSUER, "sub": "bench", "aud": aud, "client_id": "bench", "scope": "mcp:tools",
                  "iat": now, "exp": now + 3600}
        if bound:
            claims["cnf"] = {"jkt": self.client_key.thumbprint()}
        return jwt.encode({"alg": "ES256", "typ": "at+jwt", "kid": "bench"}, claims, self.issuer_key)

    def proofs(self, url: str, token: str, n: int) -> list[str]:
        import secrets

        from joserfc import jwt

        ath = b64u(hashlib.sha256(token.encode()).digest())
        header = {"alg": "ES256", "typ": "dpop+jwt", "jwk": self.client_key.as_dict(private=False)}
        now = int(time.time())
        return [jwt.encode(header, {"htm": "POST", "htu": url, "iat": now, "jti": secrets.token_hex(12), "ath": ath},
                           self.client_key) for _ in range(n)]


class Server:
    def __init__(self, mode: str, keys: Keys, pin: Pinning) -> None:
        self.mode = mode
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = dict(os.environ, BENCH_ISSUER=ISSUER, BENCH_JWKS=json.dumps(keys.jwks),
                   PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(pin.taskset("server") + [sys.executable, str(BENCH / "servers" / "echo_protected.py"),
                                                               "http", str(self.port), mode],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env, cwd=str(REPO))
        self.token = keys.token(self.url, bound=mode == "dpop") if mode != "none" else ""
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/mcp")
                conn.getresponse().read()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{mode} server did not start")

    def stop(self) -> None:
        kill(self.proc)


def run_wrk(srv: Server, keys: Keys, pin: Pinning, conns: int, duration: float, rate_hint: float) -> dict:
    args: list[str] = ["none"]
    proofs_file = None
    if srv.mode == "jwt":
        args = ["bearer", srv.token]
    elif srv.mode == "dpop":
        n = int(rate_hint * duration * 1.5) + 2000
        proofs_file = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        proofs_file.write("\n".join(keys.proofs(srv.url, srv.token, n)) + "\n")
        proofs_file.close()
        args = ["dpop", srv.token, proofs_file.name]
    ticks_before = proc_cpu_ticks(srv.proc.pid)
    try:
        cp = subprocess.run(pin.taskset("client") + ["wrk", "-t1", f"-c{conns}", f"-d{duration:g}s", "--timeout", "5s",
                                                     "-s", str(LUA), srv.url, "--", *args],
                            capture_output=True, text=True, timeout=duration + 60)
    finally:
        if proofs_file is not None:
            os.unlink(proofs_file.name)
    line = next((ln for ln in cp.stdout.splitlines() if ln.startswith("BENCHJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk failed: {cp.stdout[-400:]} {cp.stderr[-400:]}")
    out = json.loads(line[len("BENCHJSON "):])
    out["rps"] = out["requests"] / (out["duration_us"] / 1e6)
    ticks_after = proc_cpu_ticks(srv.proc.pid)
    if ticks_before is not None and ticks_after is not None and out["requests"]:
        # The server's own CPU time per request: steadier than throughput on a busy machine.
        out["cpu_us"] = (ticks_after - ticks_before) / CLK_TCK / out["requests"] * 1e6
    if out["bad"] or out["errors"]:
        raise RuntimeError(f"{srv.mode}: {out['bad']} bad answers, {out['errors']} errors")
    return out


def verify_costs(keys: Keys, n: int = 3000) -> dict[str, float]:
    """µs per call, in process: the gate with a cached token, a first-seen token, and DPoP."""
    from mcpkit.auth.server import JWTVerifier, ResourceServerAuth

    url = "http://127.0.0.1:1/mcp"
    out: dict[str, float] = {}

    async def go() -> None:
        for name, bound, cache in (("jwt cached", False, True), ("jwt first seen", False, False),
                                   ("dpop (cached token + proof)", True, True)):
            auth = ResourceServerAuth(JWTVerifier(ISSUER, jwks=keys.jwks, cache_size=4096 if cache else 1),
                                      scopes=["mcp:tools"])
            tokens = [keys.token(url, bound) for _ in range(1 if cache else n)]
            proofs = keys.proofs(url, tokens[0], n) if bound else []
            hdrs = {"authorization": ("DPoP " if bound else "Bearer ") + tokens[0]}
            await auth.authenticate("POST", url, hdrs, b"")
            start = time.perf_counter()
            for i in range(n):
                h = hdrs if cache else {"authorization": "Bearer " + tokens[i]}
                if bound:
                    h = {**hdrs, "dpop": proofs[i]}
                p = await auth.authenticate("POST", url, h, b"")
                assert not hasattr(p, "challenge"), p
            out[name] = (time.perf_counter() - start) / n * 1e6

    asyncio.run(go())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--no-pin", action="store_true")
    opts = ap.parse_args()
    pin = Pinning(not opts.no_pin)
    load_before = os.getloadavg()[0]
    keys = Keys()
    print("== in-process verification cost", flush=True)
    costs = verify_costs(keys)
    for k, v in costs.items():
        print(f"  {k}: {v:.1f} µs", flush=True)
    servers = {m: Server(m, keys, pin) for m in MODES}
    samples: dict[str, list[dict]] = {m: [] for m in MODES}
    rate_hint = 20000.0
    try:
        for srv in servers.values():  # warm-up
            run_wrk(srv, keys, pin, opts.connections, 1.0, rate_hint)
        for r in range(opts.rounds):
            order = MODES[r % 3:] + MODES[:r % 3]
            for m in order:
                out = run_wrk(servers[m], keys, pin, opts.connections, opts.duration, rate_hint)
                samples[m].append(out)
                print(f"  round {r + 1} {m}: {out['rps']:.0f} req/s, p50 {out['p50_us']} µs, p99 {out['p99_us']} µs, "
                      f"server CPU {out.get('cpu_us', float('nan')):.0f} µs/request", flush=True)
    finally:
        for srv in servers.values():
            srv.stop()
    base = statistics.median(s["rps"] for s in samples["none"])
    base_cpu = statistics.median(s.get("cpu_us", 0.0) for s in samples["none"])
    rows = [f"HTTP `tools/call` (echo), wrk -t1 -c{opts.connections}, {opts.duration:g} s x {opts.rounds} rounds "
            f"(medians), server and client on separate cores{'' if pin.enabled else ' (not pinned)'}:", "",
            "| server | req/s | p50 (ms) | p99 (ms) | throughput vs unprotected | server CPU per request (µs) "
            "| cost per request (µs) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for m in MODES:
        rps = statistics.median(s["rps"] for s in samples[m])
        p50 = statistics.median(s["p50_us"] for s in samples[m]) / 1e3
        p99 = statistics.median(s["p99_us"] for s in samples[m]) / 1e3
        cpu = statistics.median(s.get("cpu_us", 0.0) for s in samples[m])
        rows.append(f"| {LABEL[m]} | {rps:,.0f} | {p50:.2f} | {p99:.2f} | {rps / base - 1:+.1%} | {cpu:.0f} | "
                    f"{'—' if m == 'none' else f'{cpu - base_cpu:+.0f}'} |")
    rows += ["", "In-process cost of `ResourceServerAuth.authenticate` per request: "
             + ", ".join(f"{k} {v:.1f} µs" for k, v in costs.items()) + ".",
             "", f"{os.cpu_count()} cores; 1-minute load average {load_before:.1f} before the run and "
             f"{os.getloadavg()[0]:.1f} after (other work on the machine makes the HTTP rows noisy; "
             "the in-process costs are the steadier measure)."]
    table = "\n".join(rows)
    print("\n" + table)
    (BENCH / "results").mkdir(exist_ok=True)
    (BENCH / "results" / "auth.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
