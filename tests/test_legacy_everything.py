"""mcpkit's Client against a real legacy (2025-11-25 only) peer: the reference server
npm @modelcontextprotocol/server-everything@2026.8.31 (TypeScript SDK v1), over stdio and
Streamable HTTP, in ``mode="auto"``: the client must detect the legacy era, do the
``initialize`` handshake and then work through the one Client API.

The peer is installed by ``scripts/install_peers.sh everything`` (or, if that script cannot,
by ``npm install --prefix tests/.peers/everything`` here). If it cannot be installed the
tests FAIL: they are never skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpkit import EraCache
from mcpkit.client import Client
from mcpkit.client._era import era_key
from mcpkit.protocol.errors import MCPError
from tests.helpers.aio import run as aio_run
from tests.helpers.paths import PEERS_DIR as PEERS
from tests.helpers.paths import ROOT, subprocess_env
from tests.helpers.peers import run_install_script
from tests.helpers.servers import running_server

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
PREFIX = PEERS / "everything"
ENTRY = Path("node_modules") / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LEGACY = "2025-11-25"


def _run(argv: list[str], timeout: float = 900) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, cwd=str(ROOT), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {exc}")


def _install() -> tuple[str, Path]:
    """(node, entry script) of server-everything, installing it if need be; pytest.fail otherwise."""
    problems: list[str] = []
    try:
        proc, out = run_install_script(["everything"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        proc, out = subprocess.CompletedProcess([], 127, "", f"install_peers.sh: {exc}"), {}
    if proc.returncode == 0 and out.get("PEER_EVERYTHING_PREFIX"):
        node = out.get("PEER_EVERYTHING_NODE") or shutil.which("node") or ""
        entry = Path(out.get("PEER_EVERYTHING_BIN") or Path(out["PEER_EVERYTHING_PREFIX"]) / ENTRY)
        if node and entry.is_file():
            return node, entry
        problems.append(f"install_peers.sh printed node={node!r}, entry={entry} (missing)")
    else:
        problems.append(f"scripts/install_peers.sh everything exited {proc.returncode} "
                        f"without PEER_EVERYTHING_PREFIX:\n{proc.stderr[-2000:]}")
    # Fallback: install it ourselves.
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        problems.append(f"node ({node}) and npm ({npm}) are needed to install {PACKAGE}@{VERSION}")
        raise PeerUnavailable("cannot install the legacy peer:\n" + "\n".join(problems))
    entry = PREFIX / ENTRY
    pkg_json = entry.parent.parent / "package.json"
    try:
        installed = json.loads(pkg_json.read_text()).get("version") if pkg_json.is_file() else None
    except ValueError:
        installed = None
    if installed != VERSION or not entry.is_file():
        PREFIX.mkdir(parents=True, exist_ok=True)
        gitignore = PEERS / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("*\n")
        if not (PREFIX / "package.json").exists():
            (PREFIX / "package.json").write_text('{"private": true}\n')
        proc = _run([npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund", "--no-update-notifier",
                     "--loglevel=error", "--engine-strict=false", f"{PACKAGE}@{VERSION}"])
        if proc.returncode != 0 or not entry.is_file():
            problems.append(f"npm install --prefix {PREFIX} {PACKAGE}@{VERSION} exited {proc.returncode}:\n"
                            f"{proc.stderr[-2000:]}")
            raise PeerUnavailable("cannot install the legacy peer (is the npm registry reachable?):\n"
                                  + "\n".join(problems))
    return node, entry


class PeerUnavailable(Exception):
    pass


_PEER: dict[str, Any] = {}


def peer() -> tuple[str, Path]:
    """(node, entry script), installed once per session; a failure FAILS the calling test
    (inside the test, so it is reported as a failure, never a skip or a setup error)."""
    if "error" not in _PEER and "ok" not in _PEER:
        try:
            _PEER["ok"] = _install()
        except PeerUnavailable as exc:
            _PEER["error"] = str(exc)
    if "error" in _PEER:
        pytest.fail(_PEER["error"], pytrace=False)
    return _PEER["ok"]


def run(coro: Any, limit: float = 90.0) -> Any:
    return aio_run(coro, limit)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@contextlib.contextmanager
def everything_served(transport: str, **options: Any) -> Iterator[str]:
    """server-everything's ``transport`` (``streamableHttp``, ``sse``) on a free port: yields
    its URL once it answers (options as for ``running_server``: ``path``...)."""
    node, entry = peer()
    with running_server(lambda port: [node, str(entry), transport], env=lambda port: {**os.environ, "PORT": str(port)},
                        cwd=entry.parent, timeout=30, **options) as url:
        yield url


@contextlib.contextmanager
def everything_http() -> Iterator[str]:
    """server-everything's Streamable HTTP transport on a free port: yields its /mcp URL."""
    with everything_served("streamableHttp") as url:
        yield url


def stdio_argv() -> list[str]:
    node, entry = peer()
    return [node, str(entry), "stdio"]


# ---------------------------------------------------------------------------- stdio
def test_stdio_auto_detects_legacy_and_calls_echo() -> None:
    argv = stdio_argv()
    cache = EraCache()

    async def main() -> tuple[list[str], str, Any]:
        async with Client(argv, era_cache=cache, stderr=subprocess.DEVNULL) as client:
            assert client.era == "legacy"
            assert client.legacy_version == LEGACY
            assert client.initialize_result["serverInfo"]["name"]
            card = await client.discover()
            tools = [t.name for t in await client.list_tools()]
            echoed = text_of(await client.call_tool("echo", {"message": "hi"}))
            return tools, echoed, card

    tools, echoed, card = run(main())
    assert "echo" in tools
    assert echoed == "Echo: hi"
    assert card.supportedVersions == [LEGACY]
    assert "tools" in msgspec.to_builtins(card.capabilities)
    # the verdict is remembered for the command line
    assert cache.get(era_key(argv)) == "legacy"


def test_stdio_one_api_on_the_legacy_peer() -> None:
    argv = stdio_argv()

    async def main() -> None:
        async with Client(argv, era_cache=EraCache(), stderr=subprocess.DEVNULL) as client:
            assert client.era == "legacy"
            total = await client.call_tool("get-sum", {"a": 2, "b": 3})
            assert "5" in text_of(total)
            resources = await client.list_resources()
            assert resources
            read = await client.read_resource(resources[0].uri)
            assert read.contents and read.contents[0].uri == resources[0].uri
            prompts = await client.list_prompts()
            simple = next(p for p in prompts if not any(getattr(a, "required", False) for a in (p.arguments or [])))
            got = await client.get_prompt(simple.name)
            assert got.messages
            with pytest.raises(MCPError):
                await client.read_resource("demo://no/such/resource")

    run(main())


def test_stdio_legacy_peer_requests_are_answered_by_the_callbacks() -> None:
    """The peer sends sampling/createMessage, elicitation/create and roots/list during tools/call
    (legacy server-to-client requests): the same callbacks as MRTR answer them."""
    argv = stdio_argv()
    asked: dict[str, Any] = {}

    def sampling(params: Any) -> dict:
        asked["sampling"] = params
        return {"role": "assistant", "content": {"type": "text", "text": "sampled-by-mcpkit"}, "model": "mcpkit-fake"}

    async def elicitation(params: Any) -> dict:
        asked["elicitation"] = params
        return {"action": "accept", "content": {"name": "Ada Lovelace", "check": True}}

    async def main() -> dict[str, str]:
        async with Client(argv, era_cache=EraCache(), stderr=subprocess.DEVNULL,
                          sampling=sampling, elicitation=elicitation,
                          roots=[{"uri": "file:///work/mcpkit-root", "name": "mcpkit-root"}]) as client:
            assert client.era == "legacy"
            names = {t.name for t in await client.list_tools()}
            assert {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} <= names
            out = {
                "sampling": text_of(await client.call_tool("trigger-sampling-request", {"prompt": "2+2?", "maxTokens": 5})),
                "elicitation": text_of(await client.call_tool("trigger-elicitation-request", {})),
                "roots": text_of(await client.call_tool("get-roots-list", {})),
            }
            return out

    out = run(main())
    assert "sampled-by-mcpkit" in out["sampling"] and "mcpkit-fake" in out["sampling"]
    assert asked["sampling"].maxTokens == 5
    assert "Ada Lovelace" in out["elicitation"]
    assert asked["elicitation"].message
    assert "file:///work/mcpkit-root" in out["roots"]


# ---------------------------------------------------------------------------- HTTP
def test_http_auto_detects_legacy_and_calls_echo() -> None:
    async def main(url: str) -> tuple[list[str], str]:
        async with Client(url, era_cache=EraCache()) as client:
            assert client.era == "legacy"
            assert client.legacy_version == LEGACY
            assert getattr(client.transport, "session_id", None), "no Mcp-Session-Id kept for the legacy session"
            tools = [t.name for t in await client.list_tools()]
            return tools, text_of(await client.call_tool("echo", {"message": "hi"}))

    with everything_http() as url:
        tools, echoed = run(main(url))
    assert "echo" in tools
    assert echoed == "Echo: hi"


def test_http_legacy_peer_sampling_over_the_session() -> None:
    def sampling(params: Any) -> dict:
        return {"role": "assistant", "content": {"type": "text", "text": "http-sampled"}, "model": "mcpkit-fake"}

    async def main(url: str) -> str:
        async with Client(url, era_cache=EraCache(), sampling=sampling) as client:
            assert client.era == "legacy"
            return text_of(await client.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 3}))

    with everything_http() as url:
        assert "http-sampled" in run(main(url))


# ---------------------------------------------------------------------------- the discover card
def test_discover_cli_card_says_legacy() -> None:
    argv = stdio_argv()
    proc = subprocess.run([sys.executable, "-m", "mcpkit", "discover", "--", *argv],
                          capture_output=True, text=True, timeout=120, env=subprocess_env(), cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    era_line = next((line for line in lines if line.startswith("Era:")), None)
    assert era_line is not None, proc.stdout
    assert "legacy" in era_line and LEGACY in era_line, era_line
    assert any(line.startswith("Tools (") for line in lines), proc.stdout
    assert any(line.split()[:1] == ["echo"] for line in lines), proc.stdout
