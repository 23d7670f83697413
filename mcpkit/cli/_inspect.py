"""``mcpkit inspect [--port 6274] [--no-browser] TARGET``: a web inspector for a server.

Connects to TARGET with mcpkit's Client and serves the inspector page on 127.0.0.1 (see
:mod:`mcpkit.inspect`), at a URL with a random access token that it prints. Unless
``--no-browser`` it opens a browser, though not on that URL (a browser's command line is
visible to every local user): on a private redirect file holding a one-time code
(:mod:`mcpkit.inspect._launch`). Runs until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import socket
import sys
from typing import Any

from .._wakeup import run as run_loop
from . import _session
from ._help import HelpFormatter, examples
from ._safe import clean
from ._target import CliError, Target, add_target_options, require_http_extra, usage_error


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcpkit inspect", description="Open a web inspector for a server: its card, tools (with forms "
        "built from their input schemas), resources, prompts, and the history of requests. Serves on "
        "127.0.0.1 at a URL with a random access token, printed on start and opened in a browser "
        "(not with --no-browser).",
        epilog=examples("mcpkit inspect -- python examples/demo.py", "mcpkit inspect http://127.0.0.1:8000/mcp"),
        formatter_class=HelpFormatter)
    p.add_argument("items", nargs="*", metavar="TARGET", help="an http(s) URL or FILE.py (or -- COMMAND [ARGS...])")
    p.add_argument("--port", type=int, default=6274, help="the port to listen on (default 6274; 0: any free port)")
    # --no-browser comes with the connection options (OAuth's): here it also means the page
    # is not opened, only its URL printed.
    add_target_options(p)
    return p


@_session.command(parser, no_extra=True)
def main(p: argparse.ArgumentParser, ns: argparse.Namespace, _items: list[str], target: Target) -> int:
    if not 0 <= ns.port <= 65535:
        return usage_error(p, "--port must be between 0 and 65535")
    try:
        require_http_extra()
    except CliError:
        print("mcpkit inspect: the inspector needs the http extra: pip install 'mcpkit[http]'", file=sys.stderr)
        return 1
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", ns.port))
    except OSError as exc:
        sock.close()
        print(f"mcpkit inspect: cannot listen on 127.0.0.1:{ns.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    sock.listen(128)
    sock.setblocking(False)
    try:
        return run_loop(_serve(target, sock, open_browser=not ns.no_browser))
    finally:
        sock.close()
        target.close()


async def _serve(target: Target, sock: socket.socket, *, open_browser: bool) -> int:
    import uvicorn

    from ..inspect import Inspector, InspectorApp

    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    inspector = Inspector(target)
    card = await inspector.connect()
    if card.get("connected"):
        name = card["serverInfo"].get("name") or "server"
        print(clean(f"mcpkit inspect: connected to {name} ({card.get('era')}) at {card['target']}"), flush=True)
    else:
        print(clean(f"mcpkit inspect: {card['target']}: {card.get('error')} (the page can reconnect)"), file=sys.stderr,
              flush=True)
        for line in card.get("serverOutput") or []:  # as discover shows it: the server's stderr, its stray stdout
            print(clean(line), file=sys.stderr, flush=True)
    url = f"http://127.0.0.1:{port}/?token={token}"
    app = InspectorApp(inspector, token=token, port=port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            date_header=False, proxy_headers=False)

    class _Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            inspector.closing.set()  # the pages' event streams end, so shutdown can finish
            await super().shutdown(sockets)

    server = _Server(config)
    print(f"mcpkit inspect: open {url}", flush=True)
    redirect = None
    if open_browser:
        # Not the URL: a browser's argv is visible to every local user. A private file that
        # redirects with a one-time code instead (mcpkit.inspect._launch).
        import webbrowser

        from ..inspect import RedirectFile

        redirect = RedirectFile(f"http://127.0.0.1:{port}/?code={app.codes.issue()}")
        app.codes.on_used.append(redirect.remove_file)
        asyncio.get_running_loop().run_in_executor(None, webbrowser.open, redirect.uri)
    try:
        await server.serve(sockets=[sock])
    finally:
        if redirect is not None:  # first: the await below may be cancelled (Ctrl-C)
            redirect.remove()
        await inspector.close()
    return 0
