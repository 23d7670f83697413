"""TARGET on the command line: a URL, a server file, or ``-- COMMAND [ARGS...]``; the options
every command that talks to a server takes; and turning failures into one clear line (plus
what the server wrote to stderr, when it was a process and it failed)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from .._describe import describe_error as describe_error
from .._probe import kill_process as kill_process
from ..errors import CliError as CliError

if TYPE_CHECKING:
    from ..client import Client

HTTP_EXTRA = "talking to an http(s) URL needs the http extra: pip install 'mcpkit[http]'"


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """``argv`` before the first ``--``, and the command after it (None without ``--``)."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def add_target_options(parser: argparse.ArgumentParser, *, timeout: float = 30.0) -> None:
    g = parser.add_argument_group("connection")
    g.add_argument("--header", "-H", action="append", default=[], metavar="K:V",
                   help="an HTTP header for every request (repeatable)")
    g.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VAL",
                   help="an environment variable for a stdio server (repeatable)")
    g.add_argument("--timeout", type=float, default=timeout, metavar="SECONDS",
                   help=f"give up after this many seconds, everything included (default {timeout:g})")
    # --bearer TOKEN, client credentials, stored OAuth tokens (`mcpkit login`): shared with login.
    from ._login import add_auth_options
    from ._safe import add_raw_option

    add_auth_options(parser)
    add_raw_option(parser.add_argument_group("output"))


def looks_like_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def looks_like_file(text: str) -> bool:
    path = _file_part(text)
    return path.endswith(".py") or os.path.isfile(path)


def _file_part(text: str) -> str:
    """``FILE.py`` of ``FILE.py:attr``."""
    m = re.match(r"^(.*\.py):([A-Za-z_][\w.]*)$", text)
    return m.group(1) if m else text


def is_mcpkit_server_file(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(200_000)
    except OSError:
        return False
    return re.search(r"^\s*(from\s+mcpkit[\s.]|import\s+mcpkit)", head, re.M) is not None


def command_for_file(spec: str) -> list[str]:
    """How a server file is run: an mcpkit server as ``mcpkit serve`` would run it (a
    module-level ``server.run()`` or none at all both work), any other file with this Python."""
    path = _file_part(spec)
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}", 2)
    if spec != path or is_mcpkit_server_file(path):
        # -P: the current directory is not put first on sys.path (as -m would do), so a folder
        # named mcpkit there cannot stand in for mcpkit; the loader adds the file's own folder.
        return [sys.executable, "-P", "-m", "mcpkit", "serve", spec]
    return [sys.executable, path]


class Target:
    """Where the server is, and how to reach it."""

    def __init__(self, *, url: str | None = None, argv: list[str] | None = None, label: str = "",
                 headers: dict[str, str] | None = None, bearer: str | None = None,
                 env: dict[str, str] | None = None, timeout: float = 30.0) -> None:
        self.url = url
        self.argv = argv
        self.label = label or url or " ".join(argv or [])
        self.headers = headers or {}
        self.bearer = bearer
        self.env = env or {}
        self.timeout = timeout
        #: The parsed command line, for the OAuth options (``mcpkit.cli._login.auth_from_args``).
        self.args: argparse.Namespace | None = None
        self._auth: Any = _UNSET
        #: The event loop time by which everything must be done (set when a session starts).
        self.deadline: float | None = None
        #: Called with the new deadline (None: paused) when it is paused or resumed.
        self.on_deadline_moved: Any = None
        self._paused = 0
        self._left: float | None = None
        self._stderr: IO[bytes] | None = None
        self._garbage = _GarbageLog()

    def pause_deadline(self) -> None:
        """Stop the clock (while waiting for the person at the terminal); calls nest."""
        import asyncio

        self._paused += 1
        if self._paused == 1 and self.deadline is not None:
            self._left = self.deadline - asyncio.get_running_loop().time()
            self.deadline = None
            if self.on_deadline_moved is not None:
                self.on_deadline_moved(None)

    def resume_deadline(self) -> None:
        """Start the clock again with the time that was left when it was paused."""
        import asyncio

        self._paused -= 1
        if self._paused == 0 and self._left is not None:
            self.deadline = asyncio.get_running_loop().time() + max(self._left, 0.0)
            self._left = None
            if self.on_deadline_moved is not None:
                self.on_deadline_moved(self.deadline)

    def time_left(self, cap: float) -> float:
        """Seconds left before :attr:`deadline` (at most ``cap``; the whole ``timeout`` before a session)."""
        import asyncio

        if self.deadline is None:
            return min(cap, self.timeout)
        return max(0.0, min(cap, self.deadline - asyncio.get_running_loop().time()))

    @property
    def sends_credentials(self) -> bool:
        return bool(self.bearer) or any(k.lower() == "authorization" for k in self.headers)

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def client(self, **options: Any) -> Client:
        """A Client for this target (not started). HTTP needs httpx: CliError without it."""
        from ..client import Client

        options.setdefault("timeout", self.timeout)
        # The era probe follows --timeout: half of it waits for server/discover, the rest is
        # left for a silent (legacy) stdio server's restart and initialize.
        options.setdefault("probe_timeout", self.timeout / 2)
        if self.url is not None:
            if self.env:
                raise CliError("-e KEY=VAL sets a stdio server's environment; an http(s) URL takes --header K:V", 2)
            require_http_extra()
            headers = dict(self.headers)
            return Client(self.url, headers=headers or None, auth=self.auth(), **options)
        assert self.argv is not None
        if self.headers or self.bearer:
            raise CliError("--header and --bearer are for http(s) URLs; use -e KEY=VAL for a stdio server", 2)
        if self._stderr is None:
            self._stderr = tempfile.TemporaryFile()
        self._garbage.install()
        return Client(self.argv, env=self.env or None, stderr=self._stderr, **options)

    def auth(self) -> Any:
        """The auth hook for an HTTP target: ``--bearer`` (or ``MCPKIT_BEARER_TOKEN``), client
        credentials, or OAuth with stored tokens / a login on a terminal; None otherwise.
        One hook per target (a second connection, e.g. the era probe, shares it)."""
        if self._auth is not _UNSET:
            return self._auth
        from ..client import BearerAuth

        hook: Any = None
        if self.bearer:
            hook = BearerAuth(self.bearer)
        elif self.args is not None and self.url is not None and not self.sends_credentials:
            try:
                from ._login import auth_from_args

                hook = auth_from_args(self.args, self.url)
            except ImportError as exc:
                raise CliError(f"OAuth needs the oauth extra: pip install 'mcpkit[oauth]' ({exc})") from None
        self._auth = hook
        return hook

    def server_output(self, lines: int = 20) -> list[str]:
        """What the server wrote that was not MCP: its stderr (last ``lines`` lines) and the
        non-JSON lines it wrote to stdout."""
        out: list[str] = []
        if self._garbage.lines:
            out.append("the server wrote to stdout what is not JSON-RPC:")
            out.extend(f"  {ln}" for ln in self._garbage.lines[:5])
        if self._stderr is not None:
            try:
                self._stderr.seek(0)
                text = self._stderr.read().decode("utf-8", "replace")
            except (OSError, ValueError):
                text = ""
            tail = [ln for ln in text.splitlines() if ln.strip()][-lines:]
            if tail:
                out.append("the server's stderr:")
                out.extend(f"  {ln}" for ln in tail)
        return out

    def close(self) -> None:
        self._garbage.remove()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


_UNSET: Any = object()


class _GarbageLog(logging.Handler):
    """Collects the client's "server wrote an invalid message" warnings (and keeps them off
    stderr: they are shown when the command fails)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []
        self._installed = False

    def emit(self, record: logging.LogRecord) -> None:
        if "invalid message" in str(record.msg) and isinstance(record.args, tuple) and record.args:
            self.lines.append(str(record.args[-1]))

    def install(self) -> None:
        if not self._installed:
            logger = logging.getLogger("mcpkit.client")
            logger.addHandler(self)
            logger.propagate = False
            self._installed = True

    def remove(self) -> None:
        if self._installed:
            logger = logging.getLogger("mcpkit.client")
            logger.removeHandler(self)
            logger.propagate = True
            self._installed = False


def require_http_extra() -> None:
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise CliError(HTTP_EXTRA) from None


def parse_pairs(items: Sequence[str], what: str, sep: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            raise CliError(f"{what} must look like KEY{sep}VALUE, not {item!r}", 2)
        out[key.strip()] = value.strip() if sep == ":" else value
    return out


def resolve_target(positionals: list[str], command: list[str] | None, ns: argparse.Namespace) -> Target:
    """The TARGET: the command after ``--``, else the last positional (removed from the list)."""
    if command is not None:
        if not command:
            raise CliError("nothing after --: give the server's command, e.g. -- python server.py", 2)
        argv = list(command)
        label = " ".join(command)
        if len(argv) == 1 and looks_like_url(argv[0]):
            return _with_options(Target(url=argv[0]), ns)
    else:
        if not positionals:
            raise CliError("give a TARGET: an http(s) URL, FILE.py, or -- COMMAND [ARGS...]", 2)
        last = positionals.pop()
        if looks_like_url(last):
            return _with_options(Target(url=last), ns)
        if not looks_like_file(last):
            raise CliError(f"{last!r} is not a TARGET: give an http(s) URL, FILE.py, or -- COMMAND [ARGS...]", 2)
        argv = command_for_file(last)
        label = last
    return _with_options(Target(argv=argv, label=label), ns)


def _with_options(target: Target, ns: argparse.Namespace) -> Target:
    target.headers = parse_pairs(ns.header, "--header", ":")
    target.bearer = ns.bearer or (os.environ.get("MCPKIT_BEARER_TOKEN") if target.url else None) or None
    target.args = ns
    target.env = parse_pairs(ns.env, "-e", "=")
    target.timeout = ns.timeout
    if target.timeout <= 0:
        raise CliError("--timeout must be positive", 2)
    return target


# ---------------------------------------------------------------- failures, worded
def failure(prog: str, target: Target, exc: BaseException) -> int:
    """Print the failure (and what a server process wrote), return the exit status."""
    from ._safe import clean

    message = describe_error(exc, target.timeout, credentials=target.sends_credentials)
    print(clean(f"{prog}: {target.label}: {message}"), file=sys.stderr)
    for line in target.server_output():
        print(clean(line), file=sys.stderr)
    return 1


def errors_to_catch() -> tuple[type[BaseException], ...]:
    from ..errors import MCPError, OAuthError, ServerLoadError, TransportError

    # OAuthError: a login on a terminal that could not get a token (its authorization server
    # unreachable, a refused grant) is one line too, as it is off a terminal.
    return (MCPError, TransportError, OAuthError, ServerLoadError, OSError, ValueError, TimeoutError)


#: Result fields of 2026-07-28 that the client fills in with defaults for a 2025-11-25 server.
INVENTED_FOR_LEGACY = ("resultType", "ttlMs", "cacheScope")


def result_dict(client: Client, result: Any) -> dict[str, Any]:
    """A typed result as JSON data, without the fields a legacy server never sent."""
    import msgspec

    out: dict[str, Any] = msgspec.to_builtins(result)
    if client.era == "legacy" and isinstance(out, dict):
        for key in INVENTED_FOR_LEGACY:
            out.pop(key, None)
    return out


def dump_json(value: Any) -> str:
    """Pretty JSON; DEL, C1 and bidi characters escaped too (JSON escapes C0), unless --raw."""
    from ._safe import json_text

    return json_text(json.dumps(value, indent=2, ensure_ascii=False))


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2
