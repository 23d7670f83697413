"""The proxy and questions (MRTR), in both backend eras.

- a modern backend's ``input_required`` passes through as it is: the backend's own keys, every
  question at once, its ``requestState`` sealed inside the front's, nothing parked in the
  proxy, so the retry may reach another proxy process sharing the state keys;
- a legacy backend's questions sent together reach a 2026-07-28 front client together;
- the front checks ``Mcp-Param-*`` headers against the backend tools' ``x-mcp-header``
  annotations, as a server checks its own tools'.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from mcpkit import Client, MCPError
from mcpkit.protocol import codec
from mcpkit.proxy import proxy
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, SERVERS, subprocess_env
from tests.servers import proxy_asker

ASKER = SERVERS / "proxy_asker.py"
KEYS = [bytes(range(32, 64))]  # 32 distinct bytes (a test key)
ALL_CAPS = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
ANSWERS = {"user_name": {"action": "accept", "content": {"name": "Ada"}},
           "greeting": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"},
           "client_roots": {"roots": [{"uri": "file:///tmp"}]}}


def test_modern_backend_questions_pass_through_with_their_keys_and_no_state_in_the_proxy() -> None:
    back = proxy_asker.build(legacy=False)
    fronts = [proxy(back, state_keys=KEYS), proxy(back, state_keys=KEYS)]  # two "workers"
    try:
        async def main() -> tuple[dict[str, Any], dict[str, Any]]:
            async with Client(fronts[0], capabilities=ALL_CAPS) as a, Client(fronts[1], capabilities=ALL_CAPS) as b:
                first = await a.request("tools/call", {"name": "three"}, answer_input=False)
                final = await b.request("tools/call", {"name": "three", "inputResponses": ANSWERS,
                                                       "requestState": first["requestState"]}, answer_input=False)
                return first, final

        first, final = run(main(), 30)
        assert first["resultType"] == "input_required"
        assert set(first["inputRequests"]) == {"user_name", "greeting", "client_roots"}
        assert final["content"][0]["text"] == "Ada|hello|1"
        assert all(len(f.forwarder.pending) == 0 for f in fronts)
    finally:
        for f in fronts:
            f.close()


def test_modern_backend_rounds_and_a_tampered_front_state() -> None:
    back = proxy_asker.build(legacy=False)
    front = proxy(back)
    try:
        async def main() -> tuple[list[str], dict[str, Any], MCPError]:
            async with Client(front, capabilities=ALL_CAPS) as c:
                r1 = await c.request("tools/call", {"name": "two_rounds"}, answer_input=False)
                ada = {"action": "accept", "content": {"name": "Ada"}}
                r2 = await c.request("tools/call", {"name": "two_rounds", "inputResponses": {"first": ada},
                                                    "requestState": r1["requestState"]}, answer_input=False)
                lin = {"action": "accept", "content": {"name": "Lin"}}
                r3 = await c.request("tools/call", {"name": "two_rounds", "inputResponses": {"second": lin},
                                                    "requestState": r2["requestState"]}, answer_input=False)
                with pytest.raises(MCPError) as info:
                    await c.request("tools/call", {"name": "two_rounds", "inputResponses": {"second": lin},
                                                   "requestState": r2["requestState"][:-4] + "AAAA"})
                return [*r1["inputRequests"], *r2["inputRequests"]], r3, info.value

        keys, final, err = run(main(), 30)
    finally:
        front.close()
    assert keys == ["first", "second"]
    assert final["content"][0]["text"] == "Ada aka Lin"
    assert err.code == -32602  # the front's own sealed state fails to open: never forwarded




def test_legacy_backend_questions_sent_together_reach_the_front_together() -> None:
    front = proxy([sys.executable, "-m", "mcpkit", "serve", str(ASKER)], mode="legacy", env=subprocess_env(),
                  stderr=subprocess.DEVNULL)
    try:
        assert front.backend.era == "legacy"

        async def main() -> tuple[dict[str, Any], dict[str, Any]]:
            async with Client(front, capabilities=ALL_CAPS) as c:
                first = await c.request("tools/call", {"name": "three"}, answer_input=False)
                by_method = {q["method"]: k for k, q in first["inputRequests"].items()}
                answers = {by_method["elicitation/create"]: ANSWERS["user_name"],
                           by_method["sampling/createMessage"]: ANSWERS["greeting"],
                           by_method["roots/list"]: ANSWERS["client_roots"]}
                final = await c.request("tools/call", {"name": "three", "inputResponses": answers,
                                                       "requestState": first["requestState"]}, answer_input=False)
                return first, final

        first, final = run(main(), 60)
    finally:
        front.close()
    assert sorted(q["method"] for q in first["inputRequests"].values()) == [
        "elicitation/create", "roots/list", "sampling/createMessage"]
    assert final["content"][0]["text"] == "Ada|hello|1"


def _call(name: str, arguments: dict[str, Any]) -> codec.Request:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    return codec.Request(1, "tools/call", {"name": name, "arguments": arguments, "_meta": meta})


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_front_checks_mcp_param_headers_against_the_backend_tools_annotations(mode: str) -> None:
    target: Any = proxy_asker.build(legacy=False) if mode == "modern" else \
        [sys.executable, "-m", "mcpkit", "serve", str(ASKER)]
    front = proxy(target, mode="auto" if mode == "modern" else "legacy", env=None if mode == "modern" else
                  subprocess_env(), stderr=subprocess.DEVNULL)
    try:
        assert front.tool_header_map("where") == {"Region": ("region",)}
        assert front.tool_header_map("three") is None
        base = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "where"}
        front.check(_call("where", {"region": "eu"}), {**base, "mcp-param-region": "eu"})  # matches
        for bad in ({**base, "mcp-param-region": "us"}, base, {**base, "mcp-param-region": "=?base64?ZXU?="}):
            with pytest.raises(MCPError) as info:
                front.check(_call("where", {"region": "eu"}), bad)
            assert info.value.code == -32020
    finally:
        front.close()


def test_fixture_serves_one_era_only() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "conformance" / "everything_server.py"), "--help"],
                         capture_output=True, text=True, timeout=60, env=subprocess_env())
    assert "--era" in out.stdout
