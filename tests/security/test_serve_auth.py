"""Every way of serving a Server applies the server's own ``Server(auth=...)`` (issue 18, item 1):
``mcpkit serve --http FILE.py``, with ``--workers 2 --redis URL`` and with ``--reload``. An
unauthenticated ``tools/call`` of a scoped tool is a 401 with a challenge; a valid token is
served (so the auth is applied, not merely broken); the startup line says what protects the
endpoint. Also: a file's auth and ``--auth-*`` options together are refused in one line, a
wildcard bind with auth needs ``--public-url``, and ``examples/protected_server.py`` loads
under ``mcpkit serve``. Real subprocesses, real uvicorn, a real redis-server.
"""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest

pytest.importorskip("joserfc")
pytest.importorskip("uvicorn")

from tests.helpers.cli import Served, mcpkit, served
from tests.helpers.issuer import ISSUER, TestIssuer
from tests.helpers.messages import body, headers_for
from tests.helpers.paths import DEMO, ROOT
from tests.helpers.redis import RedisServer

GUARDED = '''\
from mcpkit import Server
from mcpkit.auth.server import JWTVerifier, ResourceServerAuth

server = Server("guarded", "1.0.0",
                auth=ResourceServerAuth(JWTVerifier({issuer!r}, jwks={jwks!r}), scopes=["mcp:tools"]{extra}))


@server.tool(scopes=["notes:write"])
def add(a: int, b: int) -> int:
    """A scoped tool."""
    return a + b
'''


@pytest.fixture(scope="module")
def issuer() -> TestIssuer:
    return TestIssuer()


def guarded_file(directory: Path, issuer: TestIssuer, extra: str = "") -> Path:
    path = directory / "guarded.py"
    path.write_text(GUARDED.format(issuer=ISSUER, jwks=issuer.jwks(), extra=extra))
    return path


def call_add(url: str, token: str | None = None) -> httpx.Response:
    msg = body("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    h = headers_for(msg) | ({"Authorization": f"Bearer {token}"} if token else {})
    return httpx.post(url, json=msg, headers=h, timeout=20.0, trust_env=False)


def assert_protected(url: str, issuer: TestIssuer, calls: int = 1) -> None:
    """Unauthenticated: 401 + challenge + JSON-RPC body; a token for this URL: served."""
    origin = url.rsplit("/mcp", 1)[0]
    for _ in range(calls):  # new connections: with several workers, more than one answers
        resp = call_add(url)
        assert resp.status_code == 401, resp.text
        challenge = resp.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in challenge
        assert 'scope="mcp:tools notes:write"' in challenge
        assert resp.json()["error"]["code"] == -32001
    for _ in range(calls):
        ok = call_add(url, issuer.token(url, scope="mcp:tools notes:write"))
        assert ok.status_code == 200, ok.text
        assert ok.json()["result"]["structuredContent"] == {"result": 5}
    # The scoped tool still needs its own scope, and a token for another server is refused.
    assert call_add(url, issuer.token(url, scope="mcp:tools")).status_code == 403
    other = url.replace(origin, "http://127.0.0.1:1")
    assert call_add(url, issuer.token(other, scope="mcp:tools notes:write")).status_code == 401


def protected_suffix() -> str:
    return f"modern + legacy, OAuth: {ISSUER}"


# ====================================================================== item 1
def test_serve_http_applies_the_files_auth(tmp_path: Path, issuer: TestIssuer) -> None:
    with served(guarded_file(tmp_path, issuer), cwd=tmp_path) as srv:
        assert_protected(srv.url, issuer)
        assert srv.lines[-1].strip() == f"serving guarded 1.0.0 on {srv.url} ({protected_suffix()})"



def test_workers_with_redis_apply_the_files_auth(tmp_path: Path, issuer: TestIssuer, redis: RedisServer) -> None:
    srv = Served("--workers", "2", "--redis", redis.url, guarded_file(tmp_path, issuer), cwd=tmp_path)
    try:
        m = srv.startup()
        assert_protected(srv.url, issuer, calls=4)
        assert m.group(4) == protected_suffix(), m.group(0)
    finally:
        # SIGTERM: the supervisor stops its workers (they run in sessions of their own).
        srv.signal(signal.SIGTERM)
        try:
            srv.finish(timeout=15)
        finally:
            srv.stop()


def test_reload_applies_the_files_auth(tmp_path: Path, issuer: TestIssuer) -> None:
    with served("--reload", guarded_file(tmp_path, issuer), cwd=tmp_path) as srv:
        assert_protected(srv.url, issuer)
        assert srv.lines[-1].strip() == f"serving guarded 1.0.0 on {srv.url} ({protected_suffix()})"


def test_startup_line_says_unprotected() -> None:
    with served(DEMO) as srv:
        assert srv.lines[-1].strip() == f"serving mcpkit-demo 1.0.0 on {srv.url} (modern + legacy, unprotected)"


def test_cli_auth_options_and_a_files_auth_are_refused(tmp_path: Path, issuer: TestIssuer) -> None:
    proc = mcpkit("serve", "--http", "--port", "1", "--auth-issuer", ISSUER, guarded_file(tmp_path, issuer),
                  cwd=tmp_path, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "Server(auth=...)" in lines[0] and "--auth-issuer" in lines[0]


@pytest.mark.parametrize("option", [["--auth-scope", "mcp:tools"], ["--auth-no-typ-check"]])
def test_an_auth_option_without_an_issuer_is_refused(option: list[str]) -> None:
    proc = mcpkit("serve", "--http", "--port", "1", *option, DEMO, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "--auth-issuer" in lines[0], proc.stderr


# ====================================================================== Also: a wildcard bind
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "0:0:0:0:0:0:0:0"])
def test_wildcard_bind_with_cli_auth_needs_public_url(host: str) -> None:
    proc = mcpkit("serve", "--http", "--host", host, "--port", "8000", "--auth-issuer", ISSUER, DEMO, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "--public-url" in lines[0] and host in lines[0]


def test_wildcard_bind_with_a_files_auth_needs_public_url(tmp_path: Path, issuer: TestIssuer) -> None:
    proc = mcpkit("serve", "--http", "--host", "0.0.0.0", "--port", "8000", guarded_file(tmp_path, issuer),
                  cwd=tmp_path, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "--public-url" in lines[0], proc.stderr


def test_public_url_and_a_files_own_resource_must_agree(tmp_path: Path, issuer: TestIssuer) -> None:
    path = guarded_file(tmp_path, issuer, extra=', resource="https://mcp.example.com/mcp"')
    proc = mcpkit("serve", "--http", "--port", "1", "--public-url", "https://other.example.com/mcp", path,
                  cwd=tmp_path, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "--public-url" in lines[0], proc.stderr


# ====================================================================== Also: the example
def test_protected_example_is_served_by_mcpkit_serve() -> None:
    with served(ROOT / "examples" / "protected_server.py") as srv:
        assert srv.lines[-1].strip().endswith("(modern + legacy, OAuth: http://127.0.0.1:9000)"), srv.lines
        resp = httpx.post(srv.url, json=(msg := body("tools/list")), headers=headers_for(msg), timeout=10,
                          trust_env=False)
        assert resp.status_code == 401
        meta = resp.headers["www-authenticate"].split('resource_metadata="', 1)[1].split('"', 1)[0]
        assert httpx.get(meta, timeout=10, trust_env=False).json()["resource"] == srv.url
