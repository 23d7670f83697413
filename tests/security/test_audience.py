"""The audience a protected server accepts never comes from a request header (issue 18, item 3).

``ResourceServerAuth`` without ``resource=`` used to build the accepted audience from the
request's ``Host``: a token minted for a sibling server on another port (or another name) was
accepted by sending that server's ``Host``. Now the resource URL is fixed when the server is
bound (``server.run("http")``), or taken from the local socket each request came in on (an
``http_app()`` under another ASGI server); a wildcard bind without ``resource=`` is refused.
Host allow-list entries with a port match that port only; entries without one (the loopback
defaults) match any port, as documented. Real uvicorn in subprocesses.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("joserfc")
pytest.importorskip("uvicorn")

from mcpkit import Server
from tests.helpers.issuer import ISSUER, TestIssuer
from tests.helpers.messages import body, headers_for
from tests.helpers.paths import subprocess_env
from tests.helpers.servers import asgi_client, free_port, running_server

SERVER = '''\
import sys

from mcpkit import Server
from mcpkit.auth.server import JWTVerifier, ResourceServerAuth

server = Server("audience", "1.0.0", auth=ResourceServerAuth(JWTVerifier({issuer!r}, jwks={jwks!r})))


@server.tool()
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    port, how = int(sys.argv[1]), sys.argv[2]
    if how == "run":
        server.run("http", port=port)
    elif how == "wildcard":
        server.run("http", host="0.0.0.0", port=port)
    else:  # the ASGI app under a server mcpkit does not start
        import uvicorn

        uvicorn.run(server.http_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
'''


@pytest.fixture(scope="module")
def issuer() -> TestIssuer:
    return TestIssuer()


@pytest.fixture(scope="module")
def server_file(tmp_path_factory: pytest.TempPathFactory, issuer: TestIssuer) -> Path:
    path = tmp_path_factory.mktemp("audience") / "audience_server.py"
    path.write_text(SERVER.format(issuer=ISSUER, jwks=issuer.jwks()))
    return path


@pytest.fixture(scope="module", params=["run", "http_app"])
def url(request: pytest.FixtureRequest, server_file: Path) -> Iterator[str]:
    with running_server(lambda port: [sys.executable, str(server_file), str(port), request.param],
                        cwd=server_file.parent) as where:
        yield where


def echo(url: str, token: str, host: str | None = None) -> httpx.Response:
    msg = body("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    h = headers_for(msg) | {"Authorization": f"Bearer {token}"} | ({"Host": host} if host else {})
    return httpx.post(url, json=msg, headers=h, timeout=10.0, trust_env=False)


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_token_for_a_sibling_port_is_refused_whatever_the_host_header(url: str, issuer: TestIssuer, name: str) -> None:
    sibling = f"{name}:{free_port()}"
    resp = echo(url, issuer.token(f"http://{sibling}/mcp"), host=sibling)
    assert resp.status_code == 401, resp.text
    assert 'error="invalid_token"' in resp.headers["www-authenticate"]
    assert resp.json()["error"]["code"] == -32001


def test_token_for_the_bound_url_is_served_whatever_the_host_header(url: str, issuer: TestIssuer) -> None:
    port = url.split(":")[2].split("/")[0]
    assert echo(url, issuer.token(url)).status_code == 200
    # Another loopback name for the same socket: the audience is still the bound URL.
    assert echo(url, issuer.token(url), host=f"localhost:{port}").status_code == 200
    assert echo(url, issuer.token(f"http://localhost:{port}/mcp"), host=f"localhost:{port}").status_code == 401


def test_metadata_and_challenge_name_the_bound_url(url: str) -> None:
    origin = url.rsplit("/mcp", 1)[0]
    sibling = f"127.0.0.1:{free_port()}"
    doc = httpx.get(f"{origin}/.well-known/oauth-protected-resource/mcp", headers={"Host": sibling}, timeout=10.0,
                    trust_env=False).json()
    assert doc["resource"] == url
    msg = body("tools/list")
    resp = httpx.post(url, json=msg, headers=headers_for(msg) | {"Host": sibling}, timeout=10.0, trust_env=False)
    assert resp.status_code == 401
    assert f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in resp.headers["www-authenticate"]


def test_wildcard_bind_without_a_resource_is_refused(server_file: Path) -> None:
    proc = subprocess.run([sys.executable, str(server_file), str(free_port()), "wildcard"], capture_output=True,
                          text=True, timeout=30, env=subprocess_env(), cwd=server_file.parent)
    assert proc.returncode != 0
    assert "ValueError" in proc.stderr and "resource=" in proc.stderr and "0.0.0.0" in proc.stderr


# ====================================================================== the Host allow-list
def test_allow_list_entry_with_a_port_matches_that_port_only() -> None:
    server = Server("hosts", "1.0.0")

    @server.tool()
    def ping() -> str:
        return "pong"

    app = server.http_app(allowed_hosts=["mcp.example.com:8443", "other.example.com"])
    msg = body("tools/list")
    with asgi_client(app) as c:
        def status(host: str) -> int:
            return c.post("/mcp", json=msg, headers=headers_for(msg) | {"Host": host}).status_code

        assert status("mcp.example.com:8443") == 200
        for refused in ("mcp.example.com:9443", "mcp.example.com", "mcp.example.com:08443", "mcp.example.com:8443.evil"):
            assert status(refused) == 403, refused
        # An entry without a port names the host on any port (the documented meaning).
        assert status("other.example.com:1234") == 200 and status("other.example.com") == 200
