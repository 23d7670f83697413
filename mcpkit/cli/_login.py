"""``mcpkit login URL`` / ``mcpkit logout URL``, and the auth options other commands share.

Commands that take a URL add :func:`add_auth_options` to their parser and build their
``Client(url, auth=auth_from_args(args, url))``: ``--bearer TOKEN`` and the client-credentials
options are for headless use; otherwise, on a terminal, a 401 starts the browser login on its
own (tokens are kept in the user's data directory and reused by later commands).

Nothing here prints a token or a secret.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from .._wakeup import run as run_loop
from ._help import HelpFormatter, examples

if TYPE_CHECKING:
    from ..auth import OAuth, Registration
    from ..client import Auth

EXIT_USAGE = 2
EXIT_FAIL = 1


def add_auth_options(parser: argparse.ArgumentParser, *, login: bool = False) -> None:
    """The options that say how to authorize to a server."""
    g = parser.add_argument_group("authorization")
    g.add_argument("--bearer", metavar="TOKEN",
                   help="send this access token (Authorization: Bearer) instead of logging in; "
                        "or set MCPKIT_BEARER_TOKEN")
    g.add_argument("--client-id", help="a pre-registered OAuth client id")
    g.add_argument("--client-secret", help="its secret (or set MCPKIT_CLIENT_SECRET)")
    g.add_argument("--issuer", metavar="URL",
                   help="the authorization server the client id/secret/key is registered with: they are "
                        "sent to no other (needed with a secret or key unless a login remembered it)")
    g.add_argument("--private-key", metavar="PEM_FILE", help="private_key_jwt: the client's private key file")
    g.add_argument("--signing-alg", default="ES256", help="private_key_jwt algorithm: ES256 (default) or RS256")
    g.add_argument("--client-credentials", action="store_true",
                   help="act as the client itself (client_credentials grant), no person involved")
    g.add_argument("--scope", help="request these scopes (space-separated) instead of the server's hints")
    g.add_argument("--no-browser", action="store_true", help="print the authorization URL instead of opening a browser")
    g.add_argument("--token-store", metavar="FILE",
                   help="where tokens are kept (default: oauth.json in the user's data directory)")
    g.add_argument("--allow-private-network", action="store_true",
                   help="let the server name authorization servers on private, link-local or loopback addresses")
    g.add_argument("--allow-cross-origin-metadata", action="store_true",
                   help="follow a resource_metadata URL on another origin than the server's")
    if login:  # other commands get --raw with their output options
        from ._safe import add_raw_option

        add_raw_option(g)
    if not login:
        g.add_argument("--no-login", action="store_true", help="never start an interactive login on a 401")


def add_login_commands(sub: Any) -> None:
    """Register ``login`` and ``logout`` on an ``argparse`` subparsers object."""
    p = sub.add_parser("login", help="authorize to a server (OAuth) and keep the tokens",
                       description="Log in to the MCP server at URL: discover its authorization server, "
                                   "register if needed, authorize in the browser (or with client "
                                   "credentials), and store the tokens for later commands.",
                       epilog=examples("mcpkit login https://mcp.example.com/mcp",
                                       "mcpkit login --client-credentials --client-id ID --issuer URL URL"),
                       formatter_class=HelpFormatter)
    p.add_argument("url", help="the server's MCP endpoint URL")
    p.add_argument("--force", action="store_true", help="authorize again even with valid stored tokens")
    add_auth_options(p, login=True)
    q = sub.add_parser("logout", help="forget the stored tokens for a server",
                       description="Forget the tokens `mcpkit login URL` kept for the server at URL, and "
                                   "revoke them at its authorization server (RFC 7009) when it offers that "
                                   "(not with --no-revoke).",
                       epilog=examples("mcpkit logout https://mcp.example.com/mcp"), formatter_class=HelpFormatter)
    q.add_argument("url", help="the server's MCP endpoint URL")
    q.add_argument("--token-store", metavar="FILE", help="the token file (default: the user's data directory)")
    q.add_argument("--no-revoke", action="store_true",
                   help="only forget the tokens; do not revoke them at the authorization server")
    q.add_argument("--client-id", help="the pre-registered client id the tokens were issued to (for revocation)")
    q.add_argument("--client-secret", help="its secret (or set MCPKIT_CLIENT_SECRET)")
    q.add_argument("--issuer", metavar="URL", help="the authorization server that client is registered with")


def _storage(args: argparse.Namespace) -> Any:
    from ..auth import FileTokenStorage

    return FileTokenStorage(getattr(args, "token_store", None))


def _registration(args: argparse.Namespace) -> Registration:
    """The client's registration the options describe; CliError (one line) for a key file that cannot be read."""
    from ..auth import Registration
    from ..errors import CliError

    key = None
    if getattr(args, "private_key", None):
        try:
            with open(args.private_key, "rb") as f:
                key = f.read()
        except OSError as exc:
            raise CliError(f"--private-key {args.private_key}: {exc.strerror or exc}", 2) from None
    secret = getattr(args, "client_secret", None) or os.environ.get("MCPKIT_CLIENT_SECRET")
    return Registration(client_id=getattr(args, "client_id", None), client_secret=secret,
                        issuer=getattr(args, "issuer", None), private_key=key,
                        signing_algorithm=getattr(args, "signing_alg", "ES256"), client_name="mcpkit")


def _oauth(args: argparse.Namespace, url: str, *, interactive: bool = True) -> OAuth:
    """The OAuth hook the options describe; CliError (one line) for options that cannot work."""
    from ..errors import CliError

    try:
        return _make_oauth(args, url, interactive=interactive)
    except ImportError as exc:
        raise CliError(f"OAuth needs the oauth extra: pip install 'mcpkit[oauth]' ({exc})") from None
    except ValueError as exc:  # the OAuth client's own check of its options
        raise CliError(str(exc), 2) from None


def _make_oauth(args: argparse.Namespace, url: str, *, interactive: bool) -> OAuth:
    from ..errors import CliError

    if getattr(args, "client_credentials", False) and not getattr(args, "client_id", None):
        raise CliError("--client-credentials needs --client-id, and --client-secret (or MCPKIT_CLIENT_SECRET) "
                       "or --private-key", 2)
    registration = _registration(args)
    from ..auth import AuthorizationCode, ClientCredentials, Grant, Network, OAuth, OAuthError

    network = Network(allow_private_network=getattr(args, "allow_private_network", False),
                      allow_cross_origin_metadata=getattr(args, "allow_cross_origin_metadata", False))
    grant: Grant
    if args.client_credentials:
        grant = ClientCredentials()
    elif interactive:  # the loopback listener is made only when a login is needed
        grant = AuthorizationCode(open_browser=not args.no_browser)
    else:
        async def no_person(authorization_url: str, redirect_uri: str) -> str:
            raise OAuthError(f"{url} needs a login: run `mcpkit login {url}` on a terminal, or pass --bearer",
                             error="login_required")

        grant = AuthorizationCode(no_person, redirect_uri="http://127.0.0.1/callback")
    return OAuth(url, grant, registration=registration, scope=args.scope, storage=_storage(args),
                 network=network)


def auth_from_args(args: argparse.Namespace, url: str) -> Auth | None:
    """The auth hook for a command's ``Client``: a bearer token, client credentials, or
    (stored tokens / a login on a terminal) OAuth; None when nothing applies."""
    token = getattr(args, "bearer", None) or os.environ.get("MCPKIT_BEARER_TOKEN")
    if token:
        from ..client import BearerAuth

        return BearerAuth(token)
    if getattr(args, "client_credentials", False):
        return _oauth(args, url)
    interactive = sys.stdin.isatty() and sys.stderr.isatty() and not getattr(args, "no_login", False)
    stored = _storage(args).get_tokens(_canonical(url)) is not None
    if interactive or stored:
        return _oauth(args, url, interactive=interactive)
    return None


def _canonical(url: str) -> str:
    from ..client.oauth import canonical_resource

    return canonical_resource(url)


async def _login(args: argparse.Namespace) -> int:
    from ..errors import OAuthError
    from ._safe import clean, set_raw

    set_raw(getattr(args, "raw", False))
    oauth = _oauth(args, args.url)
    try:
        tokens = await oauth.authorize(force=args.force)
    except OAuthError as exc:
        if await _answers_without_auth(args.url):
            print(clean(f"mcpkit login: {args.url} answers without authorization: there is nothing to log in to "
                        f"(the login attempt said: {exc})"), file=sys.stderr)
        else:
            print(clean(f"mcpkit login: {exc}"), file=sys.stderr)  # the authorization server's words
        return EXIT_FAIL
    parts = [f"Logged in to {args.url}", f"authorization server {tokens.get('issuer')}"]
    if tokens.get("scope") or tokens.get("scope_requested"):
        parts.append(f"scope {tokens.get('scope') or tokens.get('scope_requested')}")
    if isinstance(tokens.get("expires_at"), int | float):
        parts.append(f"expires in {max(0, int(tokens['expires_at'] - time.time()))} s")
    if tokens.get("refresh_token"):
        parts.append("refreshable")
    print(clean("; ".join(parts) + f". Tokens kept in {getattr(oauth.storage, 'path', 'the token store')}."))
    return 0


async def _answers_without_auth(url: str) -> bool:
    """Whether the server at ``url`` answers ``server/discover`` (or ``initialize``) with no
    token at all: a failed login there is not what stands in the way."""
    from ..client import Client
    from ..errors import MCPKitError

    try:
        async with Client(url, timeout=5.0, probe_timeout=5.0, cache=False, restart=False):
            return True
    except (MCPKitError, OSError, TimeoutError, ValueError):
        return False


def run_login_command(args: argparse.Namespace) -> int:
    """Run ``login`` or ``logout`` from parsed arguments; returns the exit status."""
    from ..errors import CliError

    if not str(getattr(args, "url", "")).startswith(("http://", "https://")):
        print(f"mcpkit {args.cmd}: URL must be http(s)", file=sys.stderr)
        return EXIT_USAGE
    if args.cmd == "login" and args.bearer:
        print("mcpkit login: --bearer gives a token to the other commands (mcpkit call --bearer TOKEN ...); "
              "login gets a token, so it takes no --bearer", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.cmd == "logout":
            return _logout(args)
        return run_loop(_login(args))
    except CliError as exc:
        print(f"mcpkit {args.cmd}: {exc}", file=sys.stderr)
        return exc.code
    except ImportError as exc:  # a dependency loaded only when the flow needs it
        from ._extras import missing_extra

        print(f"mcpkit {args.cmd}: {missing_extra(exc, 'OAuth', 'oauth')}", file=sys.stderr)
        return EXIT_FAIL


def _logout(args: argparse.Namespace) -> int:
    from ..errors import CliError

    try:
        from ..auth import OAuth

        oauth = OAuth(args.url, registration=_registration(args), storage=_storage(args))
    except ImportError as exc:
        raise CliError(f"OAuth needs the oauth extra: pip install 'mcpkit[oauth]' ({exc})") from None
    except ValueError as exc:
        raise CliError(str(exc), 2) from None
    if run_loop(oauth.logout(revoke=not args.no_revoke)):
        print(f"Logged out of {args.url}.")
    else:
        print(f"No stored tokens for {args.url}.")
    return 0


def main(argv: list[str]) -> int:
    """``login URL ...`` or ``logout URL ...`` (the command first); the exit status."""
    parser = argparse.ArgumentParser(prog="mcpkit")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_login_commands(sub)
    return run_login_command(parser.parse_args(argv))


def login(argv: list[str]) -> int:
    """``mcpkit login URL ...``."""
    return main(["login", *argv])


def logout(argv: list[str]) -> int:
    """``mcpkit logout URL ...``."""
    return main(["logout", *argv])
