"""The echo server of bench/servers/echo_mcpkit.py behind mcpkit's OAuth resource server.

argv: ``http PORT none|jwt|dpop``. ``jwt`` and ``dpop`` verify JWT access tokens against the
JWKS in ``BENCH_JWKS`` (JSON; the keys as a verifier holds them after its first fetch) for the
issuer ``BENCH_ISSUER``, with the audience check on (the URL http://127.0.0.1:PORT/mcp) and
scope ``mcp:tools`` required; ``dpop`` also requires DPoP-bound tokens and a fresh proof on
every request. ``none`` is the same server unprotected.
"""

import json
import os
import sys

from mcpkit import Server

server = Server("echo", "1.0.0")


@server.tool()
async def echo(text: str) -> str:
    """Echo the text back."""
    return text


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[1] != "http":
        raise SystemExit("usage: echo_protected.py http PORT none|jwt|dpop")
    port, mode = int(sys.argv[2]), sys.argv[3]
    kwargs = {}
    if mode != "none":
        from mcpkit.auth.server import JWTVerifier, ResourceServerAuth

        verifier = JWTVerifier(os.environ["BENCH_ISSUER"], jwks=json.loads(os.environ["BENCH_JWKS"]))
        kwargs["auth"] = ResourceServerAuth(verifier, scopes=["mcp:tools"], dpop="require" if mode == "dpop" else "allow")
    server.run("http", host="127.0.0.1", port=port, access_log=False, **kwargs)


if __name__ == "__main__":
    main()
