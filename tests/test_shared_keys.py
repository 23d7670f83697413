"""MRTR requestState across server processes that share (or don't share) a state key ring.

Several real HTTP server processes (``python -m mcpkit serve --http``) of
``tests/servers/mrtr_server.py``: process A mints the requestState in the first round, process
B completes the retry, as behind a load balancer with no sticky sessions. Keys come from
``MCPKIT_STATE_KEYS`` (comma-separated: the first seals, all open) or from ``Server(state_keys=)``.
A process holding other keys rejects the state with -32602 "Invalid or expired requestState"
(HTTP 200), and keeps serving.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers.messages import META_CAPS, META_VERSION, VERSION, check_result, headers_for
from tests.helpers.paths import MRTR_SERVER, subprocess_env
from tests.helpers.servers import ServerProcess, mcpkit_serve_argv

MRTR_FILE = MRTR_SERVER
INVALID_STATE = {"code": -32602, "message": "Invalid or expired requestState"}
ADA = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
GREET_HI = {"name": "greet", "arguments": {"greeting": "Hi"}}
SHARED = "M7K_Zi9-1_Rh16dMLFjUpgmY375g5Vjm-13a-i9S6DM="  # keys: 32 random bytes, base64url
NEW_KEY = "T8sxofvFAQoOVufN8wfzr-AY3qBLfufA56sufH-78c4="

#: name -> (served spec, MCPKIT_STATE_KEYS or None to leave it unset)
PROCESSES = {
    "A": (str(MRTR_FILE), SHARED),
    "B": (str(MRTR_FILE), SHARED),
    "C": (str(MRTR_FILE), "8MhvinAiMs2X5KEYXqH4PCDWqIfqZvec2z5HIZkBTuY="),
    "D": (str(MRTR_FILE), f"{NEW_KEY},{SHARED}"),  # rotation: seals with the new key, still opens the old
    "E": (str(MRTR_FILE), None),  # no keys: a random per-process key
    "S": (str(MRTR_FILE), f"{NEW_KEY}, {SHARED}"),  # as a person writes a list: a space after the comma
    "P": (f"{MRTR_FILE}:keyed", None),  # Server(state_keys=[KEY_A])
    "Q": (f"{MRTR_FILE}:keyed", "FXg_1t54CxLsEjb03PuD9GFuCNPXqG3xOtqwXUxmMeE="),  # ignored: state_keys is given
    "R": (f"{MRTR_FILE}:other_keys", None),  # Server(state_keys=[KEY_B])
}


def _env(keys: str | None) -> dict[str, str]:
    env = subprocess_env()
    env.pop("MCPKIT_STATE_KEYS", None)
    if keys is not None:
        env["MCPKIT_STATE_KEYS"] = keys
    return env


@contextlib.contextmanager
def serve_all(specs: dict[str, tuple[str, str | None]], timeout: float = 20.0) -> Iterator[dict[str, str]]:
    """Start every process at once (``python -m mcpkit serve --http``), yield name -> URL once all answer."""
    procs: dict[str, ServerProcess] = {}
    try:
        for name, (spec, keys) in specs.items():
            procs[name] = ServerProcess(mcpkit_serve_argv(spec), env=_env(keys))
        for name, srv in procs.items():
            if not srv.wait_ready(timeout):
                raise RuntimeError(f"server {name} did not start:\n{srv.output()}")
        yield {name: srv.url for name, srv in procs.items()}
    finally:
        for srv in procs.values():
            srv.stop()


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    with serve_all(PROCESSES) as u:
        yield u


_ids = iter(range(1, 1_000_000))


def call(url: str, method: str, p: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    msg = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": {
        "_meta": {META_VERSION: VERSION, META_CAPS: {"elicitation": {}}},
        **p}}
    r = httpx.post(url, content=json.dumps(msg).encode(), headers=headers_for(msg), timeout=10.0)
    reply = r.json()
    assert reply["id"] == msg["id"], reply
    return r.status_code, reply


def mint(url: str, p: dict[str, Any] = GREET_HI, answers: dict[str, Any] | None = None,
         state: str | None = None) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if state is not None:
        extra = {"requestState": state, "inputResponses": answers or {}}
    status, reply = call(url, "tools/call", {**p, **extra})
    assert status == 200, reply
    result = reply["result"]
    assert result["resultType"] == "input_required", result
    return result


def complete(url: str, state: str, p: dict[str, Any] = GREET_HI, answers: dict[str, Any] = ADA) -> dict[str, Any]:
    status, reply = call(url, "tools/call", {**p, "requestState": state, "inputResponses": answers})
    assert status == 200, reply
    check_result("tools/call", reply["result"])
    return reply["result"]


def rejected(url: str, state: str, p: dict[str, Any] = GREET_HI) -> None:
    status, reply = call(url, "tools/call", {**p, "requestState": state, "inputResponses": ADA})
    assert status == 200, reply
    assert "result" not in reply and reply["error"] == INVALID_STATE, reply
    # ...and that process still serves: a first round of its own completes there.
    own = mint(url)["requestState"]
    assert complete(url, own)["content"][0]["text"] == "Hi, Ada!"


def test_process_b_completes_the_retry_that_process_a_minted(urls: dict[str, str]) -> None:
    state = mint(urls["A"])["requestState"]
    assert complete(urls["B"], state)["content"][0]["text"] == "Hi, Ada!"
    # And the other way round.
    state = mint(urls["B"])["requestState"]
    assert complete(urls["A"], state)["content"][0]["text"] == "Hi, Ada!"


def test_a_multi_round_request_hops_between_processes_keeping_its_state(urls: dict[str, str]) -> None:
    wiz = {"name": "wizard"}
    first = mint(urls["A"], wiz)
    assert set(first["inputRequests"]) == {"name"}
    second = mint(urls["B"], wiz, {"name": {"action": "accept", "content": {"name": "Grace"}}}, first["requestState"])
    assert set(second["inputRequests"]) == {"age"}
    done = complete(urls["D"], second["requestState"], wiz, {"age": {"action": "accept", "content": {"age": 85}}})
    nonce = first["inputRequests"]["name"]["params"]["message"].split("nonce ")[1].rstrip("]")
    assert done["structuredContent"] == {"name": "Grace", "age": 85, "runs": 3, "nonce": nonce,
                                         "history": ["after-name-2", "after-name-3"]}


def test_a_process_with_a_different_key_rejects_the_state(urls: dict[str, str]) -> None:
    rejected(urls["C"], mint(urls["A"])["requestState"])
    rejected(urls["A"], mint(urls["C"])["requestState"])


def test_a_process_without_configured_keys_neither_accepts_nor_is_accepted(urls: dict[str, str]) -> None:
    rejected(urls["E"], mint(urls["A"])["requestState"])
    rejected(urls["B"], mint(urls["E"])["requestState"])


def test_key_rotation_new_key_seals_old_key_still_opens(urls: dict[str, str]) -> None:
    # D holds [new, shared]: it opens what A sealed with the shared key...
    assert complete(urls["D"], mint(urls["A"])["requestState"])["content"][0]["text"] == "Hi, Ada!"
    # ...but seals with the new key, which A and B do not hold.
    from_d = mint(urls["D"])["requestState"]
    rejected(urls["A"], from_d)
    assert complete(urls["D"], from_d)["content"][0]["text"] == "Hi, Ada!"


def test_state_keys_argument_is_shared_by_processes_of_the_same_server(urls: dict[str, str]) -> None:
    """Server(state_keys=[...]) wins over MCPKIT_STATE_KEYS (Q has the variable set)."""
    state = mint(urls["P"])["requestState"]
    assert complete(urls["Q"], state)["content"][0]["text"] == "Hi, Ada!"
    rejected(urls["R"], mint(urls["Q"])["requestState"])
    rejected(urls["P"], mint(urls["R"])["requestState"])


def test_shared_keys_do_not_lift_the_binding_to_the_request(urls: dict[str, str]) -> None:
    state = mint(urls["A"])["requestState"]
    status, reply = call(urls["B"], "tools/call", {"name": "greet", "arguments": {"greeting": "Yo"},
                                                   "requestState": state, "inputResponses": ADA})
    assert status == 200 and reply["error"] == INVALID_STATE, reply
    status, reply = call(urls["B"], "prompts/get", {"name": "intro", "arguments": {"topic": "Hi"},
                                                    "requestState": state, "inputResponses": ADA})
    assert status == 200 and reply["error"] == INVALID_STATE, reply
    # The genuine retry still completes on B.
    assert complete(urls["B"], state)["content"][0]["text"] == "Hi, Ada!"


def test_keys_listed_with_spaces_after_commas_still_open_the_shared_state(urls: dict[str, str]) -> None:
    state = mint(urls["A"])["requestState"]
    status, reply = call(urls["S"], "tools/call", {**GREET_HI, "requestState": state, "inputResponses": ADA})
    assert "result" in reply, reply
