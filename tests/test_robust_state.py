"""``requestState`` is accepted in its canonical form only (unpadded base64url, RFC 4648 §5).

Before, padding, stray characters, the ``+``/``/`` alphabet, whitespace and non-zero trailing
bits all decoded to the same bytes and were accepted: many strings opened as one token. Each
variant must now get the usual ``-32602 Invalid or expired requestState``.

The round trips run a real server process (``python -m mcpkit serve
tests/servers/mrtr_server.py:keyed`` over stdio). Self-contained: no conftest helpers.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit.server._state import KeyRing, StateError, StateSealer, digest_arguments

ROOT = Path(__file__).resolve().parent.parent
MRTR_SERVER = ROOT / "tests" / "servers" / "mrtr_server.py"
KEY_A = "iCzKk9rXJxiTQKgjCyq049t9a9kJr0HNItEKw6nOejU="  # what mrtr_server.py's ``keyed`` server seals with
VERSION = "2026-07-28"
INVALID_STATE = {"code": -32602, "message": "Invalid or expired requestState"}
GREET_HI = {"name": "greet", "arguments": {"greeting": "Hi"}}
ADA = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _raise_trailing_bits(tok: str) -> str:
    """Set unused low bits of the last character: the same bytes, another string."""
    unused = {2: 4, 3: 2}[len(tok) % 4]  # base64 chars carry 6 bits; the last one's low bits are padding
    i = B64URL.index(tok[-1])
    return tok[:-1] + B64URL[i | ((1 << unused) - 1)]


def _std_alphabet(tok: str) -> str:
    return tok.replace("-", "+").replace("_", "/")


#: Each variant decoded (leniently) to exactly the genuine token's bytes.
VARIANTS: dict[str, Callable[[str], str]] = {
    "one-pad": lambda t: t + "=",
    "two-pad": lambda t: t + "==",
    "full-padding": lambda t: t + "=" * (-len(t) % 4 or 4),
    "leading-dots": lambda t: "...." + t,
    "inner-dot": lambda t: t[:8] + "...." + t[8:],
    "line-breaks": lambda t: t[:8] + "\r\n\r\n" + t[8:],  # stray characters come in fours: padding still fits
    "trailing-space": lambda t: t + "    ",
    "standard-alphabet": _std_alphabet,
    "trailing-bits": _raise_trailing_bits,
}


def _unb64(tok: str) -> bytes:
    return base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4))


def _lenient_b64(tok: str) -> bytes:
    """How the old code decoded (non-validating)."""
    return base64.b64decode(tok.replace("-", "+").replace("_", "/") + "=" * (-len(tok) % 4))


def seal_greet(ring_key: str = KEY_A, *, filler: str = "") -> str:
    """A requestState for tools/call greet {greeting: Hi}, sealed as the keyed server would."""
    sealer = StateSealer(KeyRing([ring_key]), 600.0)
    return sealer.seal(method="tools/call", name="greet", digest=digest_arguments(GREET_HI["arguments"]),
                       principal=None, asked=["user_name"], answers={}, state={"pad": filler} if filler else {})


def tokens_of_every_length_class() -> dict[int, str]:
    """Sealed tokens whose lengths are 0, 2 and 3 mod 4 (1 never happens for base64)."""
    out: dict[int, str] = {}
    for n in range(12):
        tok = seal_greet(filler="x" * n)
        out.setdefault(len(tok) % 4, tok)
    assert set(out) == {0, 2, 3}, set(out)
    return out


def applicable(how: str, tok: str) -> bool:
    if how == "trailing-bits":
        return len(tok) % 4 in (2, 3) and _raise_trailing_bits(tok) != tok
    if how == "standard-alphabet":
        return _std_alphabet(tok) != tok
    return True


# =========================================================================== unit
@pytest.mark.parametrize("how", sorted(VARIANTS))
def test_variants_decoding_to_the_same_bytes_are_refused(how: str) -> None:
    ring = KeyRing([KEY_A])
    tried = 0
    for tok in tokens_of_every_length_class().values():
        ring.open(tok)  # the genuine token opens
        if not applicable(how, tok):
            continue
        bad = VARIANTS[how](tok)
        assert bad != tok and _lenient_b64(bad) == _unb64(tok), "the variant must decode to the same bytes"
        with pytest.raises(StateError):
            ring.open(bad)
        tried += 1
    assert tried


@pytest.mark.parametrize("token", [None, 12, b"AAAA", "", "A", "AAAAA", "*" * 40])
def test_non_tokens_are_refused(token: Any) -> None:
    with pytest.raises(StateError):
        KeyRing([KEY_A]).open(token)


def test_every_sealed_token_is_canonical() -> None:
    ring = KeyRing([KEY_A])
    for n in range(40):
        tok = ring.seal(b"p" * n)
        assert set(tok) <= set(B64URL) and "=" not in tok
        assert ring.open(tok) == b"p" * n


# =========================================================================== real server
class StdioServer:
    """The keyed MRTR server over stdio; ``call`` sends one request and returns its answer."""

    ids = itertools.count(1)

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        env.pop("MCPKIT_STATE_KEYS", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "mcpkit", "serve", f"{MRTR_SERVER}:keyed"], cwd=str(ROOT),
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(self.ids)
        meta = {"io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                "io.modelcontextprotocol/clientInfo": {"name": "test_robust_state", "version": "0"}}
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"_meta": meta, **params}}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.lines.get(timeout=15)
            assert line is not None, "the server exited"
            reply = json.loads(line)
            if reply.get("id") == rid:
                return reply

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def server() -> Iterator[StdioServer]:
    s = StdioServer()
    try:
        yield s
    finally:
        s.close()


def retry(server: StdioServer, token: str) -> dict[str, Any]:
    return server.call("tools/call", {**GREET_HI, "requestState": token, "inputResponses": ADA})


def greeted(reply: dict[str, Any]) -> bool:
    result = reply.get("result") or {}
    return result.get("resultType") == "complete" and result["content"][0]["text"] == "Hi, Ada!"


def test_round_trip_control(server: StdioServer) -> None:
    first = server.call("tools/call", GREET_HI)["result"]
    assert first["resultType"] == "input_required"
    assert greeted(retry(server, first["requestState"]))
    for tok in tokens_of_every_length_class().values():  # sealed by us with the server's key
        assert greeted(retry(server, tok))


@pytest.mark.parametrize("how", sorted(VARIANTS))
def test_tampered_encodings_are_refused_by_the_server(server: StdioServer, how: str) -> None:
    minted = server.call("tools/call", GREET_HI)["result"]["requestState"]
    tried = 0
    for tok in [minted, *tokens_of_every_length_class().values()]:
        if not applicable(how, tok):
            continue
        bad = VARIANTS[how](tok)
        assert _lenient_b64(bad) == _unb64(tok)
        reply = retry(server, bad)
        assert reply.get("error") == INVALID_STATE, (how, reply)
        assert greeted(retry(server, tok))  # the genuine token still works, the server is up
        tried += 1
    assert tried
