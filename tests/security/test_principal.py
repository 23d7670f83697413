"""Principal keys are unambiguous, and a caller without sub/client_id gets no binding (issue 18, item 11)."""

from __future__ import annotations

import pytest

pytest.importorskip("joserfc")

from mcpkit.auth.server import JWTVerifier, Principal, ResourceServerAuth
from tests.helpers.issuer import ISSUER, TestIssuer
from tests.helpers.legacy import JSON_ACCEPT
from tests.helpers.messages import META_CAPS, body, headers_for, init_msg
from tests.helpers.servers import ASGI_URL, asgi_client
from tests.test_auth_server import make_server


def test_keys_do_not_collide() -> None:
    empty: frozenset[str] = frozenset()
    assert Principal("client:X", None, empty, issuer=ISSUER).key != Principal(None, "X", empty, issuer=ISSUER).key
    assert Principal("alice", None, empty, issuer="https://a").key != Principal("alice", None, empty, issuer="https://b").key
    assert Principal("alice", None, empty, issuer=None).key != Principal("alice", None, empty, issuer="").key
    assert Principal(None, None, empty, issuer=ISSUER).key is None


def test_a_token_without_sub_or_client_gets_no_binding() -> None:
    issuer = TestIssuer()
    auth = ResourceServerAuth(JWTVerifier(ISSUER, http_client=issuer.http()), scopes=["mcp:tools"])
    nobody = issuer.token(ASGI_URL, sub=None, client_id=None)
    with asgi_client(make_server().http_app(auth=auth)) as http:
        # MRTR: no requestState is minted for a caller it cannot be bound to.
        msg = body("tools/call", {"name": "greet", "arguments": {}})
        msg["params"]["_meta"][META_CAPS] = {"elicitation": {"form": {}}}
        reply = http.post(ASGI_URL, json=msg, headers=headers_for(msg) | {"Authorization": f"Bearer {nobody}"}).json()
        assert "error" in reply and "neither a subject" in reply["error"]["message"], reply
        # Tasks: refused, not owned by None.
        msg = body("tools/call", {"name": "slow", "arguments": {}})
        msg["params"]["_meta"][META_CAPS] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        reply = http.post(ASGI_URL, json=msg, headers=headers_for(msg) | {"Authorization": f"Bearer {nobody}"}).json()
        assert "error" in reply and "neither a subject" in reply["error"]["message"], reply
        # Legacy session: refused with a JSON-RPC body.
        resp = http.post(ASGI_URL, json=init_msg(), headers=dict(JSON_ACCEPT) | {"Authorization": f"Bearer {nobody}"})
        assert resp.status_code == 403 and "neither a subject" in resp.json()["error"]["message"], resp.text
