"""Fuzz an MCP server over Streamable HTTP: hostile bodies and MCP headers, every answer checked.

    PYTHONPATH=. python fuzz/http_fuzz.py [--cases 3000] [--seed 1] [--url http://127.0.0.1:PORT/mcp]

Without ``--url`` it starts ``python -m mcpkit serve --http --port P examples/demo.py`` on a
free loopback port (``--server FILE.py`` to serve another). Bodies are the stdio fuzzer's
frames (``fuzz/_frames.py``; no listen streams); headers are mirrored from the body and, for
a share of the cases, broken: missing, wrong, duplicated, non-ASCII, bad Base64 sentinels,
odd Accept and Content-Type values. A few cases use other HTTP methods and paths.

Raw-socket cases (a share ``--raw``) send what httpx will not: header blocks over the size
limit, too many header fields, malformed HTTP; each must be refused (431 or 400) with a
JSON-RPC body. ``--slow N`` slowloris connections (a body shorter than its Content-Length,
headers that never end, silence) are opened first and must each get 408 and be closed by the
server before the run ends (the default deadline is 20 s).

Checked: no 5xx but the deliberate 503 (with ``Retry-After``, counted apart); every POST gets
a response (no reset, no timeout); no well-formed request, huge headers included, has its
connection dropped (reset, or closed without a status: ``dropped_connections``, printed on
its own line before the summary); JSON bodies and SSE events are well-formed JSON-RPC; a
frame owed an answer gets it, with its id, exactly once, unless the request was refused before
its body was read (406, 408, 413, 415, 431, 503: the refusals are counted by status); 202 only
for frames owed nothing; the server process is still up at the end. Not fuzzed: Host and
Origin. Exit status 0 when all hold; the last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _frames import _MISSING, VERSION, Case, FrameGen, Ledger, expect, key  # noqa: E402

NAME_SOURCES = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(script: Path, *, timeout: float = 20.0) -> Iterator[tuple[str, subprocess.Popen[bytes], Any]]:
    """``mcpkit serve --http`` on a free port: yields (url, process, stderr file)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    for _attempt in range(3):
        port = free_port()
        err = tempfile.TemporaryFile()
        proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "serve", "--http", "--port", str(port), str(script)],
                                cwd=str(ROOT), env=env, stdout=subprocess.DEVNULL, stderr=err)
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                httpx.get(url, timeout=1.0)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        if proc.poll() is None:
            try:
                yield url, proc, err
            finally:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                err.close()
            return
        err.close()
    raise RuntimeError("the HTTP server did not start")


def mirrored_headers(case: Case) -> list[tuple[bytes, bytes]]:
    """The headers a correct client sends with ``case``'s intended request."""
    hdrs = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream"),
            (b"mcp-protocol-version", VERSION.encode())]
    if case.method is not None:
        hdrs.append((b"mcp-method", case.method.encode("utf-8", "replace")))
        source = NAME_SOURCES.get(case.method)
        value = case.params.get(source) if isinstance(case.params, dict) and source else None
        if isinstance(value, str):
            from mcpkit.protocol.headers import encode_value

            hdrs.append((b"mcp-name", encode_value(value).encode()))
    return hdrs


def break_headers(hdrs: list[tuple[bytes, bytes]], rng: random.Random) -> list[tuple[bytes, bytes]]:
    hdrs = list(hdrs)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(7)
        names = [b"mcp-protocol-version", b"mcp-method", b"mcp-name", b"mcp-param-x", b"accept", b"content-type"]
        name = rng.choice(names)
        value = rng.choice([b"", b" ", b"tools/call", b"TOOLS/LIST", VERSION.encode(), b"2025-11-25", b"1999-01-01",
                            b"=?base64?!!!?=", b"=?base64?/w==?=", b"=?base64?Z3JlZXQ=?=", b"caf\xc3\xa9", b"\xff\xfe",
                            b"a\tb", b"x" * 4000, b"text/plain", b"*/*", b"text/event-stream", b"application/json; q=0",
                            b"text/html", b"application/x-www-form-urlencoded", b"application/json; charset=utf-8",
                            b"application/*;q=0, */*"])
        if op == 0:
            hdrs = [h for h in hdrs if h[0] != name]
        elif op in (1, 2, 3):
            hdrs = [h for h in hdrs if h[0] != name] + [(name, value)]
        elif op == 4:
            hdrs.append((name, value))  # a duplicate
        elif op == 5:
            hdrs.append((b"mcp-param-" + rng.choice([b"a", b"region", b"x" * 50]), value))
        else:
            hdrs = [(n.upper() if rng.random() < 0.5 else n, v) for n, v in hdrs]
    return hdrs


def parse_body(ledger: Ledger, resp: httpx.Response) -> list[Any]:
    ctype = resp.headers.get("content-type", "")
    if ctype.startswith("text/event-stream"):
        out = []
        for line in resp.text.splitlines():
            if line.startswith("data:"):
                out.append(ledger.take(line[5:].strip()))
        if not out:
            ledger.invalid.append(f"an event stream without data: {resp.text[:200]!r}")
        return out
    if ctype.startswith("application/json"):
        return [ledger.take(resp.content)]
    ledger.invalid.append(f"HTTP {resp.status_code} with content-type {ctype!r}: {resp.content[:200]!r}")
    return []


#: Statuses that refuse a request before its body is read (no id can be known): owed answers are excused.
REFUSALS = (406, 408, 413, 415, 431, 503)


def _raw_exchange(url: str, data: bytes, *, timeout: float = 10.0) -> tuple[int | None, dict[str, str], bytes, bool, bool]:
    """Send ``data`` on a fresh socket; (status, headers, body, closed by the server, reset)."""
    u = httpx.URL(url)
    with socket.create_connection((u.host, u.port), timeout=timeout) as s:
        with contextlib.suppress(OSError):
            s.sendall(data)
        return _read_response(s, timeout)


def _read_response(s: socket.socket, timeout: float) -> tuple[int | None, dict[str, str], bytes, bool, bool]:
    """(status, headers, body, closed by the server, reset by the server)."""
    s.settimeout(timeout)
    buf = b""
    closed = reset = False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            buf += chunk
    except TimeoutError:
        pass
    except ConnectionResetError:
        reset = True
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status: int | None = int(lines[0].split()[1])
    except (IndexError, ValueError):
        status = None
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, body, closed, reset


def raw_case(rng: random.Random, url: str) -> tuple[str, bytes, tuple[int, ...]]:
    """(kind, request bytes, acceptable statuses) of a request httpx would not send."""
    u = httpx.URL(url)
    head = f"POST {u.raw_path.decode()} HTTP/1.1\r\nHost: {u.host}:{u.port}\r\nContent-Type: application/json\r\n"
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    end = f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
    kind = rng.choice(["huge-header", "many-headers", "huge-url", "bad-http", "bad-length"])
    # (huge-header, many-headers and huge-url are well-formed HTTP, only too large: see WELL_FORMED_RAW)
    if kind == "huge-header":
        return kind, head.encode() + b"X-Big: " + b"a" * rng.choice([70_000, 1_000_000, 8_000_000]) + b"\r\n" + end, (431,)
    if kind == "many-headers":
        extra = "".join(f"X-H{i}: v\r\n" for i in range(rng.choice([150, 1000, 5000])))
        return kind, head.encode() + extra.encode() + end, (431,)
    if kind == "huge-url":
        return kind, b"POST /mcp?" + b"q" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n" + end, (431,)
    if kind == "bad-http":
        return kind, rng.choice([b"POST /mcp HTTP/1.1\r\nHost\r\n\r\n", b"\x00\x01\x02 garbage\r\n\r\n",
                                 b"POST /mcp HTTP/9.9\r\n\r\n"]), (400, 505)
    return kind, head.encode() + b"Content-Length: 12x\r\n\r\n" + body, (400,)


#: Raw cases that are well-formed HTTP (too large, not malformed): a dropped connection counts.
WELL_FORMED_RAW = ("huge-header", "many-headers", "huge-url")


def open_slowloris(url: str, n: int) -> list[tuple[str, socket.socket]]:
    u = httpx.URL(url)
    out = []
    for i in range(n):
        s = socket.create_connection((u.host, u.port), timeout=10)
        kind = ["short-body", "endless-headers", "silent"][i % 3]
        if kind == "short-body":
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: {u.host}:{u.port}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: 100\r\n\r\n{{\"jsonrpc\"".encode())
        elif kind == "endless-headers":
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: {u.host}:{u.port}\r\nX-A: 1\r\n".encode())
        out.append((kind, s))
    return out


def run(cases: int = 3000, seed: int = 1, url: str | None = None, *, script: Path | None = None,
        big: bool = True, headers: float = 0.3, legacy: float = 0.0, verbose: bool = False,
        raw: float = 0.01, slow: int = 3) -> dict[str, Any]:
    """Run one session against ``url`` (or a server started here); returns the summary.

    ``legacy``: the share of requests sent inside a 2025-11-25 session (opened first with
    ``initialize``; ``Mcp-Session-Id`` and the legacy version header instead of mirroring).
    """
    if url is None:
        with http_server(script or ROOT / "examples" / "demo.py") as (started_url, proc, err):
            summary = _run(cases, seed, started_url, big=big, headers=headers, legacy=legacy, verbose=verbose,
                           raw=raw, slow=slow)
            summary["server_up_at_end"] = proc.poll() is None
            err.seek(0)
            text = err.read().decode("utf-8", "replace")
            summary["tracebacks"] = text.count("Traceback (most recent call last)")
            if summary["tracebacks"]:
                summary.setdefault("examples", {})["stderr_tail"] = text[-3000:]
            summary["ok"] = summary["ok"] and summary["server_up_at_end"] and summary["tracebacks"] == 0
            return summary
    return _run(cases, seed, url, big=big, headers=headers, legacy=legacy, verbose=verbose, raw=raw, slow=slow)


LEGACY_INIT = {"jsonrpc": "2.0", "id": "legacy-init", "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "mcpkit-fuzz", "version": "0"}}}


def _open_legacy_session(client: httpx.Client, url: str) -> str:
    r = client.post(url, json=LEGACY_INIT, headers={"accept": "application/json, text/event-stream"})
    sid = r.headers.get("mcp-session-id")
    if r.status_code != 200 or not sid:
        raise RuntimeError(f"the server opened no legacy session: HTTP {r.status_code} {r.text[:200]}")
    client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
    return sid


def _check_refusal(ledger: Ledger, what: str, status: int | None, hdrs: dict[str, str], body: bytes) -> None:
    """A refusal must be a JSON-RPC error in an application/json body."""
    if not hdrs.get("content-type", "").startswith("application/json"):
        ledger.invalid.append(f"{what}: HTTP {status} with content-type {hdrs.get('content-type')!r}: {body[:200]!r}")
        return
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if not (isinstance(doc, dict) and doc.get("jsonrpc") == "2.0" and isinstance(doc.get("error"), dict)):
        ledger.invalid.append(f"{what}: HTTP {status} without a JSON-RPC error body: {body[:200]!r}")


def _run(cases: int, seed: int, url: str, *, big: bool, headers: float, legacy: float, verbose: bool,
         raw: float = 0.0, slow: int = 0) -> dict[str, Any]:
    gen = FrameGen(seed, big=big, listen=False)
    rng = random.Random(seed ^ 0x5EED)
    ledger = Ledger()
    statuses: dict[int, int] = {}
    no_response: list[str] = []
    server_errors: list[dict[str, Any]] = []
    bad_202: list[str] = []
    frames_by_id: dict[str, tuple[str, bytes, Any]] = {}
    kinds: dict[str, int] = {}
    refused_by_client = 0
    refusals: dict[int, int] = {}
    deliberate_503 = 0
    raw_kinds: dict[str, int] = {}
    raw_wrong: list[str] = []
    # Well-formed requests whose connection was reset, or closed, before any status came back.
    dropped: list[str] = []
    started = time.monotonic()
    slowloris = open_slowloris(url, slow)
    base = url.rsplit("/mcp", 1)[0]
    with httpx.Client(timeout=30.0) as client:
        session = _open_legacy_session(client, url) if legacy > 0 else None
        for i in range(cases):
            if raw and rng.random() < raw:
                rkind, data, wanted = raw_case(rng, url)
                raw_kinds[rkind] = raw_kinds.get(rkind, 0) + 1
                status, rh, rbody, _closed, reset = _raw_exchange(url, data)
                if rkind in WELL_FORMED_RAW and (status is None or reset):
                    dropped.append(f"{rkind} ({len(data)} bytes): status {status}, reset={reset}")
                statuses[status or 0] = statuses.get(status or 0, 0) + 1
                if status in REFUSALS:
                    refusals[status] = refusals.get(status, 0) + 1
                if status not in wanted:
                    raw_wrong.append(f"{rkind}: HTTP {status}, wanted {wanted}: {rbody[:200]!r}")
                else:
                    _check_refusal(ledger, rkind, status, rh, rbody)
                continue
            case = gen.case()
            kinds[case.kind] = kinds.get(case.kind, 0) + 1
            if session is not None and rng.random() < legacy:
                hdrs = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream"),
                        (b"mcp-protocol-version", b"2025-11-25"), (b"mcp-session-id", session.encode())]
            else:
                hdrs = mirrored_headers(case)
            if rng.random() < headers:
                hdrs = break_headers(hdrs, rng)
            method, target = "POST", url
            odd = rng.random()
            if odd < 0.01:
                method = rng.choice(["GET", "DELETE", "PUT", "PATCH"])
                # (A GET in a session opens its standing event stream, which never ends by itself.)
                hdrs = [h for h in hdrs if h[0].lower() != b"mcp-session-id"]
            elif odd < 0.02:
                target = rng.choice([base + "/mcp/", base + "/", base + "/other", url + "?x=1"])
            e = expect(case.data)
            owed_here = method == "POST" and target.split("?")[0].rstrip("/").endswith("/mcp")
            if owed_here:
                ledger.expect(e)
                for rid in e.may:
                    frames_by_id.setdefault(json.dumps(rid), (case.kind, case.data[:300], hdrs))
            try:
                resp = client.request(method, target, content=case.data if method != "GET" else None, headers=hdrs)
            except httpx.LocalProtocolError:
                refused_by_client += 1  # headers the client library will not send
                if owed_here:
                    _forget(ledger, e)
                continue
            except httpx.HTTPError as exc:
                no_response.append(f"{type(exc).__name__}: {case.kind}: {case.data[:200]!r}")
                if isinstance(exc, (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)):
                    dropped.append(f"{type(exc).__name__}: {exc}: {case.kind} ({len(case.data)} bytes)")
                continue
            statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
            if resp.status_code in REFUSALS:
                refusals[resp.status_code] = refusals.get(resp.status_code, 0) + 1
            if resp.status_code == 503 and resp.headers.get("retry-after"):
                deliberate_503 += 1  # the in-flight cap: deliberate, not a failure
                _check_refusal(ledger, "503", 503, dict(resp.headers), resp.content)
                if owed_here:
                    _forget(ledger, e)
                continue
            if resp.status_code >= 500:
                server_errors.append({"status": resp.status_code, "kind": case.kind, "method": method, "target": target,
                                      "headers": [(n.decode("latin-1"), v.decode("latin-1")[:100]) for n, v in hdrs],
                                      "body": case.data[:300].decode("utf-8", "backslashreplace"),
                                      "response": resp.text[:300]})
                continue
            if not owed_here:
                continue
            if resp.status_code in REFUSALS and e.owed is not _MISSING:
                ledger.excused.add(key(e.owed))  # refused unread (size, media types): no id can be known
            if resp.status_code in REFUSALS:
                _check_refusal(ledger, case.kind, resp.status_code, dict(resp.headers), resp.content)
                continue
            if resp.status_code == 202:
                if resp.content:
                    ledger.invalid.append(f"202 with a body: {resp.content[:200]!r}")
                if e.owed is not _MISSING:
                    bad_202.append(f"{case.kind}: {case.data[:200]!r}")
                continue
            if resp.status_code == 404 and resp.headers.get("content-type", "").startswith("text/plain"):
                ledger.invalid.append(f"plain 404 on the MCP path: {case.data[:100]!r}")
                continue
            for msg in parse_body(ledger, resp):
                result = msg.get("result") if isinstance(msg, dict) else None
                if isinstance(result, dict) and resp.headers.get("mcp-session-id") not in (None, session):
                    # A legacy initialize opened a session: close it, as a client would.
                    client.delete(url, headers={"mcp-session-id": resp.headers["mcp-session-id"],
                                                "mcp-protocol-version": "2025-11-25"})
            if verbose and i % 1000 == 999:
                print(f"  {i + 1} cases, {time.monotonic() - started:.1f}s", file=sys.stderr)
    slow_results: dict[str, int] = {"closed_with_408": 0, "not_closed": 0, "other": 0}
    slow_wrong: list[str] = []
    for skind, sock in slowloris:
        remaining = max(0.5, 40.0 - (time.monotonic() - started))  # the server's deadline is 20 s by default
        status, sh, sbody, closed, _reset = _read_response(sock, remaining)
        sock.close()
        if status == 408 and closed:
            slow_results["closed_with_408"] += 1
            _check_refusal(ledger, f"slowloris {skind}", status, sh, sbody)
            refusals[408] = refusals.get(408, 0) + 1
        elif not closed:
            slow_results["not_closed"] += 1
            slow_wrong.append(f"slowloris {skind}: still open after {time.monotonic() - started:.0f} s")
        else:
            slow_results["other"] += 1
            slow_wrong.append(f"slowloris {skind}: HTTP {status}, closed={closed}: {sbody[:100]!r}")
    summary = ledger.summary()
    missing = ledger.missing()
    summary.update({
        "cases": cases, "seed": seed, "legacy_share": legacy, "statuses": dict(sorted(statuses.items())),
        "http_5xx": len(server_errors),
        "no_response": len(no_response), "bad_202": len(bad_202), "refused_by_client": refused_by_client,
        "refusals": dict(sorted(refusals.items())), "deliberate_503": deliberate_503, "raw_cases": raw_kinds,
        "raw_wrong_status": len(raw_wrong), "dropped_connections": len(dropped), "slowloris": slow_results,
        "seconds": round(time.monotonic() - started, 1), "kinds": kinds,
    })
    summary["ok"] = not (server_errors or no_response or bad_202 or missing or ledger.duplicates or ledger.unexpected
                         or ledger.invalid or raw_wrong or slow_wrong or dropped)
    if not summary["ok"]:
        summary["examples"] = {
            "http_5xx": server_errors[:5],
            "no_response": no_response[:5],
            "bad_202": bad_202[:5],
            "unanswered": [_example(frames_by_id, rid) for rid in missing[:5]],
            "duplicates": [_example(frames_by_id, rid) for rid in ledger.duplicates[:5]],
            "unexpected": [repr(rid)[:100] for rid in ledger.unexpected[:5]],
            "invalid": ledger.invalid[:5],
            "raw_wrong_status": raw_wrong[:5],
            "dropped_connections": dropped[:5],
            "slowloris": slow_wrong[:5],
        }
    return summary


def _forget(ledger: Ledger, e: Any) -> None:
    """Undo ``ledger.expect(e)`` for a request that was never sent."""
    for rid in dict.fromkeys(key(i) for i in e.may):
        ledger.allowed[rid] -= 1
    if e.owed is not _MISSING:
        ledger.owed[key(e.owed)] -= 1


def _example(frames_by_id: dict[str, tuple[str, bytes, Any]], rid: Any) -> dict[str, Any]:
    kind, data, hdrs = frames_by_id.get(json.dumps(rid), ("?", b"", []))
    return {"id": repr(rid)[:100], "kind": kind, "body": data[:300].decode("utf-8", "backslashreplace"),
            "headers": [(n.decode("latin-1"), v.decode("latin-1")[:100]) for n, v in hdrs]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=3000, help="requests to send (default 3000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--url", help="fuzz a running server instead of starting one")
    ap.add_argument("--server", type=Path, help="server file for mcpkit serve --http (default examples/demo.py)")
    ap.add_argument("--small", action="store_true", help="no multi-megabyte bodies")
    ap.add_argument("--headers", type=float, default=0.3, help="share of requests with broken headers (default 0.3)")
    ap.add_argument("--legacy", type=float, default=0.0, help="share of requests sent in a 2025-11-25 session (default 0)")
    ap.add_argument("--raw", type=float, default=0.01, help="share of raw-socket cases (default 0.01)")
    ap.add_argument("--slow", type=int, default=3, help="slowloris connections to open first (default 3)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    summary = run(args.cases, args.seed, args.url, script=args.server, big=not args.small, headers=args.headers,
                  legacy=args.legacy, verbose=args.verbose, raw=args.raw, slow=args.slow)
    print(f"dropped connections (well-formed requests reset or closed without a status): "
          f"{summary.get('dropped_connections', 0)} of {args.cases} cases")
    print(json.dumps(summary, indent=2 if args.verbose else None))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
