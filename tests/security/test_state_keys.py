"""The requestState key ring (issue 18, item 14) and single-use requestState (the replay note).

- A key must be at least 32 random bytes (base64url, base64 or hex): a passphrase in
  ``MCPKIT_STATE_KEYS`` or ``Server(state_keys=)`` is refused at startup with one line that
  names where the key came from and how to make a good one.
- The key id every token carries is derived from the key with HKDF under its own label, not
  a fast hash of the key, and is authenticated with the payload; rotation keeps working.
- ``Server(state_single_use=True)`` accepts each requestState once, in one process (memory)
  and across workers sharing Redis (``RedisBackend.install``); a replay gets -32602.

Real processes (``python -m mcpkit serve``) where the behaviour is a process's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpkit import KeyRing, Server
from mcpkit.server._state import StateError
from tests.helpers.messages import META_CAPS, META_VERSION, VERSION, headers_for
from tests.helpers.paths import MRTR_SERVER, ROOT, subprocess_env
from tests.helpers.redis import RedisServer, workers_argv
from tests.helpers.servers import ServerProcess, mcpkit_serve_argv

MAKE_KEY = 'python -c "import secrets,base64;print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())"'
GREET_HI = {"name": "greet", "arguments": {"greeting": "Hi"}}
ADA = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
SPENT = "requestState was already used"

WEAK = {
    "passphrase": "correct horse battery staple",
    "short-word": "hunter2",
    "dashed-passphrase": "mrtr-tests-key-A",
    "lowercase-long": "thequickbrownfoxjumpsoverthelazydogthequickbrown",
    "repeated-hex": "a" * 64,
    "pattern-hex": "deadbeef" * 8,
    "16-random-bytes": base64.urlsafe_b64encode(bytes(range(16))).decode(),
}


def good_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def _unb64(tok: str) -> bytes:
    return base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4))


# ============================================================================ key format
@pytest.mark.parametrize("name", sorted(WEAK))
def test_a_weak_state_key_is_refused_by_the_server(name: str) -> None:
    with pytest.raises(ValueError) as info:
        Server("weak", state_keys=[good_key(), WEAK[name]])
    line = str(info.value)
    assert "\n" not in line and line.startswith("state_keys: key 2 "), line
    assert MAKE_KEY in line, line


@pytest.mark.parametrize("name", ["passphrase", "repeated-hex"])
def test_a_weak_MCPKIT_STATE_KEYS_stops_mcpkit_serve_with_one_line(name: str) -> None:
    env = subprocess_env(MCPKIT_STATE_KEYS=WEAK[name])
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "serve", str(MRTR_SERVER)], cwd=str(ROOT), env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    err = proc.stderr.strip()
    assert proc.returncode != 0, (proc.returncode, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "MCPKIT_STATE_KEYS: key 1 " in err and MAKE_KEY in err, err


def test_a_weak_MCPKIT_STATE_KEYS_is_refused_by_serve_workers_before_it_starts() -> None:
    code = ("from mcpkit._workers import serve_workers\n"
            f"try:\n    serve_workers({str(MRTR_SERVER)!r}, workers=1, port=0)\n"
            "except ValueError as exc:\n    print('refused:', exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=subprocess_env(MCPKIT_STATE_KEYS="hunter2"),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.stdout.startswith("refused: MCPKIT_STATE_KEYS: key 1 "), (proc.stdout, proc.stderr)


@pytest.mark.parametrize("form", ["base64url", "base64url-unpadded", "base64", "hex", "raw-bytes", "64-bytes"])
def test_random_keys_in_every_documented_form_are_accepted_and_rotate(form: str) -> None:
    raw = secrets.token_bytes(64 if form == "64-bytes" else 32)
    key: str | bytes = {
        "base64url": base64.urlsafe_b64encode(raw).decode(),
        "base64url-unpadded": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "base64": base64.b64encode(raw).decode(),
        "hex": raw.hex(),
        "raw-bytes": raw,
        "64-bytes": base64.urlsafe_b64encode(raw).decode(),
    }[form]
    old = KeyRing([key])
    token = old.seal(b"payload")
    rotated = KeyRing([good_key(), key])  # a new key seals, the old one still opens
    assert rotated.open(token) == b"payload"
    with pytest.raises(StateError):  # the old ring does not hold the new sealing key
        old.open(rotated.seal(b"new"))


def test_the_key_id_in_a_token_is_not_a_fast_hash_of_the_key() -> None:
    """A token's key id must not let anyone test a key guess with one SHA-256: it is an
    HKDF output under its own label, and is 8 bytes after the version byte."""
    raw = secrets.token_bytes(32)
    for given in (raw, base64.urlsafe_b64encode(raw).decode()):
        blob = _unb64(KeyRing([given]).seal(b"x"))
        assert blob[0] == 2, blob[:1]
        key_id = blob[1:9]
        for candidate in (raw, base64.urlsafe_b64encode(raw), b"mcpkit-state-key:" + raw):
            digest = hashlib.sha256(candidate).digest()
            assert key_id[:4] != digest[:4], "the key id is a fast hash of the key"
        assert key_id[:4] != hashlib.sha256(hashlib.sha256(b"mcpkit-state-key:" + raw).digest()).digest()[:4]


def test_the_key_id_is_authenticated() -> None:
    """Two keys of one ring: a token whose key id is switched to the other key fails (the
    header is part of the AEAD's associated data)."""
    a, b = good_key(), good_key()
    ring = KeyRing([a, b])
    blob = bytearray(_unb64(ring.seal(b"x")))
    other_id = _unb64(KeyRing([b]).seal(b"y"))[1:9]
    blob[1:9] = other_id
    forged = base64.urlsafe_b64encode(bytes(blob)).decode().rstrip("=")
    with pytest.raises(StateError):
        ring.open(forged)


# ============================================================================ single use
_ids = iter(range(1, 1_000_000))


def call(url: str, p: dict[str, Any]) -> dict[str, Any]:
    msg = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {
        "_meta": {META_VERSION: VERSION, META_CAPS: {"elicitation": {}}}, **p}}
    r = httpx.post(url, content=json.dumps(msg).encode(), headers=headers_for(msg), timeout=10.0, trust_env=False)
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    return reply


def first_round(url: str) -> str:
    result = call(url, GREET_HI)["result"]
    assert result["resultType"] == "input_required", result
    token: str = result["requestState"]
    return token


def retry(url: str, token: str) -> dict[str, Any]:
    return call(url, {**GREET_HI, "requestState": token, "inputResponses": ADA})


def assert_completed(reply: dict[str, Any]) -> None:
    assert reply.get("result", {}).get("content", [{}])[0].get("text") == "Hi, Ada!", reply


def assert_spent(reply: dict[str, Any]) -> None:
    assert "result" not in reply and reply["error"]["code"] == -32602, reply
    assert reply["error"]["message"].startswith(SPENT), reply


@pytest.fixture(scope="module")
def single_use_server() -> Iterator[ServerProcess]:
    srv = ServerProcess(mcpkit_serve_argv(f"{MRTR_SERVER}:single_use"))
    try:
        assert srv.wait_ready(30), srv.output()
        yield srv
    finally:
        srv.stop()


def test_single_use_state_is_accepted_once(single_use_server: ServerProcess) -> None:
    url = single_use_server.url
    token = first_round(url)
    assert_completed(retry(url, token))
    assert_spent(retry(url, token))  # the replay: the handler does not run again
    assert_spent(retry(url, token))
    assert_completed(retry(url, first_round(url)))  # a fresh request still completes


def test_single_use_does_not_spend_a_state_that_fails_verification(single_use_server: ServerProcess) -> None:
    url = single_use_server.url
    token = first_round(url)
    wrong = call(url, {"name": "greet", "arguments": {"greeting": "Yo"}, "requestState": token, "inputResponses": ADA})
    assert wrong["error"]["message"] == "Invalid or expired requestState", wrong
    assert_completed(retry(url, token))


def test_without_single_use_a_state_is_replayable_as_documented() -> None:
    srv = ServerProcess(mcpkit_serve_argv(f"{MRTR_SERVER}:keyed"))
    try:
        assert srv.wait_ready(30), srv.output()
        token = first_round(srv.url)
        assert_completed(retry(srv.url, token))
        assert_completed(retry(srv.url, token))  # the default: replays within the TTL (README)
    finally:
        srv.stop()


def test_single_use_state_is_spent_across_workers_sharing_redis() -> None:
    redis = RedisServer()
    redis.start()
    a = b = None
    try:
        a = ServerProcess(workers_argv(f"{MRTR_SERVER}:single_use", workers=1, redis_url=redis.url))
        b = ServerProcess(workers_argv(f"{MRTR_SERVER}:single_use", workers=1, redis_url=redis.url))
        assert a.wait_ready(30), a.output()
        assert b.wait_ready(30), b.output()
        token = first_round(a.url)
        assert_completed(retry(a.url, token))
        assert_spent(retry(b.url, token))  # spent on A, refused on B
        other = first_round(b.url)
        assert_completed(retry(a.url, other))  # shared keys: B's state completes on A
        assert_spent(retry(b.url, other))
    finally:
        for srv in (a, b):
            if srv is not None:
                srv.stop()
        redis.close()
