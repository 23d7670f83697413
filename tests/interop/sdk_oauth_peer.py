"""Interop peer: the official MCP Python SDK's OAuth client (``OAuthClientProvider``) logs in
to an authorization server and calls a tool on a protected MCP server.

Runs under the peer's own venv, never under mcpkit's.

    python sdk_oauth_peer.py URL MODE LOGIN

The SDK discovers the protected resource metadata from the 401 challenge and sends the
person to the authorization URL. The client is registered beforehand (RFC 7591, without a
scope: oidc-provider refuses resource-server scopes in a registration, and the SDK would
send the challenge's ``mcp:tools`` there). The "person" is headless:
it drives oidc-provider's login and consent pages over HTTP and hands the redirect's code
back. Prints one JSON object: what each step returned, or ``{"error": ...}``.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import sys
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

from sdk_peer import Report, dump

REDIRECT = "http://127.0.0.1:8765/callback"


class Memory:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, info: Any) -> None:
        self.client = info


async def run(url: str, mode: str, login: str) -> dict[str, Any]:
    import httpx2
    from mcp.client import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    out = Report(mode=mode)
    landed: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        out["authorizationUrl"] = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()
                                   if k in ("resource", "scope", "code_challenge_method", "response_type")}
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as browser:
            resp = await browser.get(authorization_url)
            for _ in range(20):
                here = str(resp.request.url)
                if resp.status_code in (302, 303) and "location" in resp.headers:
                    target = urljoin(here, resp.headers["location"])
                    if target.startswith(REDIRECT):
                        landed.update({k: v[0] for k, v in parse_qs(urlsplit(target).query).items()})
                        return
                    resp = await browser.get(target)
                    continue
                form = re.search(r'<form[^>]*action="([^"]+)"', resp.text)
                prompt = re.search(r'name="prompt" value="(\w+)"', resp.text)
                if resp.status_code == 200 and form and prompt:
                    data = {"prompt": prompt.group(1)}
                    if data["prompt"] == "login":
                        data |= {"login": login, "password": "any"}
                    resp = await browser.post(urljoin(here, html.unescape(form.group(1))), data=data)
                    continue
                raise RuntimeError(f"unexpected page: HTTP {resp.status_code} at {here}: {resp.text[:300]}")
        raise RuntimeError("too many steps")

    async def callback_handler() -> AuthorizationCodeResult:
        if "code" not in landed:
            raise RuntimeError(f"no code in the redirect: {landed}")
        return AuthorizationCodeResult(code=landed["code"], state=landed.get("state"), iss=landed.get("iss"))

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"], token_endpoint_auth_method="none",
                                            client_name="sdk-oauth-peer"),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        out.step = "register"
        storage.client = await register(url)
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                out.step = "tools/list"
                out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
                out.step = "tools/call whoami"
                out["whoami"] = dump(await client.call_tool("whoami", {}))
    except BaseException as exc:
        out.failed(exc)
    return out


async def register(url: str) -> Any:
    """Register a public client at the AS the resource metadata names (RFC 9728, RFC 8414, RFC 7591)."""
    import httpx2
    from mcp.shared.auth import OAuthClientInformationFull

    u = urlsplit(url)
    async with httpx2.AsyncClient(timeout=10) as http:
        prm = (await http.get(f"{u.scheme}://{u.netloc}/.well-known/oauth-protected-resource{u.path}")).json()
        issuer = prm["authorization_servers"][0]
        meta = (await http.get(f"{issuer}/.well-known/openid-configuration")).json()
        resp = await http.post(meta["registration_endpoint"], json={
            "redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none", "client_name": "sdk-oauth-peer"})
        resp.raise_for_status()
        return OAuthClientInformationFull.model_validate(resp.json())


def main() -> None:
    url, mode, login = sys.argv[1], sys.argv[2], sys.argv[3]
    print(json.dumps(asyncio.run(run(url, mode, login))), flush=True)


if __name__ == "__main__":
    main()
