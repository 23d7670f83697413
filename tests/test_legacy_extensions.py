"""A 2025-11-25 client declares its extensions in ``initialize`` (``capabilities.extensions``),
as the MCP Apps and extensions specifications say, and a server reads them from the session.

mcpkit's client in the legacy era against mcpkit's server over stdio (the app-only tool of
examples/apps_server.py is there only when MCP Apps was declared) and against the official
Python SDK's server, whose tool reports the capabilities it received.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from mcpkit import Client
from mcpkit.client._era import legacy_capabilities
from mcpkit.extensions.apps import APP_MIME_TYPE, Apps
from tests.helpers.aio import run
from tests.helpers.paths import INTEROP, ROOT, subprocess_env
from tests.helpers.peers import install_peers

EXAMPLE = ROOT / "examples" / "apps_server.py"
RENDERS = {"extensions": {Apps.id: {"mimeTypes": [APP_MIME_TYPE]}}}


def test_legacy_initialize_declares_extensions() -> None:
    caps = legacy_capabilities({**RENDERS, "elicitation": {"form": {}}, "tasks": {"x": 1}})
    assert caps == {**RENDERS, "elicitation": {"form": {}}}  # tasks: the 2026-07-28 extension is not a legacy key


@pytest.mark.parametrize("caps", [RENDERS, None])
def test_app_only_tool_on_a_legacy_session(caps: dict[str, Any] | None) -> None:
    argv = [sys.executable, "-m", "mcpkit", "serve", str(EXAMPLE)]

    async def go() -> None:
        async with Client(argv, mode="legacy", capabilities=caps, env=subprocess_env()) as client:
            names = {t.name for t in await client.list_tools()}
            assert client.era == "legacy"
            if caps:
                assert names == {"roll_dice", "dice_stats"}
                stats = await client.call_tool("dice_stats", {"rolls": [2, 4]})
                assert stats.content[0].text == "total 6, mean 3.00, highest 4"
            else:
                assert names == {"roll_dice"}

    run(go())


def test_official_python_sdk_server_receives_the_extensions() -> None:
    python = install_peers([], ("PEER_PYTHON",), "the official MCP Python SDK")["PEER_PYTHON"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}

    async def go() -> None:
        async with Client([python, str(INTEROP / "sdk_caps_server.py")], mode="legacy", capabilities=RENDERS,
                          env=env) as client:
            assert client.era == "legacy"
            result = await client.call_tool("client_capabilities")
            declared = json.loads(result.content[0].text)
            assert declared["extensions"] == RENDERS["extensions"]

    run(go())
