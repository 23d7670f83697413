"""``_meta`` keys: syntax, reserved prefixes, the well-known names; and the version registry."""

from __future__ import annotations

import pytest

from mcpkit.protocol import meta as M
from mcpkit.protocol import versions as V


@pytest.mark.parametrize("key", [
    "", "progressToken", "a", "x1", "a-b_c.d", "com.example/thing", "com.example/", "io.modelcontextprotocol/protocolVersion",
    "a/b", "a1.b2/c", "a-b.c-d/e.f", "traceparent", "com.example/1",
])
def test_valid_keys(key):
    assert M.is_valid_key(key)


@pytest.mark.parametrize("key", [
    "-a", "a-", "_a", "a_", ".a", "a.", "a b", "a/b/c", "/name", "1abc/name", "a-/x", "a..b/x", "a./x",
    "com.exa_mple/x", "com.example/-x", "é", "key!", "com..example/x",
])
def test_invalid_keys(key):
    assert not M.is_valid_key(key)


def test_invalid_keys_lists_only_the_offenders():
    meta = {"ok": 1, "com.example/fine": 2, "bad key": 3, "-x": 4}
    assert M.invalid_keys(meta) == ["bad key", "-x"]
    assert M.invalid_keys({}) == []


@pytest.mark.parametrize("key", [
    "io.modelcontextprotocol/protocolVersion", "dev.mcp/x", "org.modelcontextprotocol.api/x", "com.mcp.tools/x",
    "io.modelcontextprotocol/",
])
def test_reserved_keys(key):
    assert M.is_reserved(key)


@pytest.mark.parametrize("key", [
    "com.example.mcp/x",   # the second label is "example"
    "mcp/x",               # no second label
    "modelcontextprotocol/x", "progressToken", "com.example/io.modelcontextprotocol", "traceparent",
])
def test_unreserved_keys(key):
    assert not M.is_reserved(key)


def test_extension_ids_need_a_prefix():
    assert M.is_valid_extension_id("com.example/ext")
    assert not M.is_valid_extension_id("ext")
    assert not M.is_valid_extension_id("bad prefix/ext")


def test_well_known_keys():
    assert M.PROTOCOL_VERSION == "io.modelcontextprotocol/protocolVersion"
    assert M.CLIENT_CAPABILITIES == "io.modelcontextprotocol/clientCapabilities"
    assert M.CLIENT_INFO == "io.modelcontextprotocol/clientInfo"
    assert M.SERVER_INFO == "io.modelcontextprotocol/serverInfo"
    assert M.REQUIRED_REQUEST_KEYS == (M.PROTOCOL_VERSION, M.CLIENT_CAPABILITIES)
    for key in (M.PROTOCOL_VERSION, M.CLIENT_CAPABILITIES, M.CLIENT_INFO, M.LOG_LEVEL, M.SERVER_INFO):
        assert M.is_valid_key(key) and M.is_reserved(key)
    assert M.is_valid_key(M.PROGRESS_TOKEN) and not M.is_reserved(M.PROGRESS_TOKEN)


def test_log_levels_are_ordered():
    assert M.LOG_LEVELS[0] == "debug" and M.LOG_LEVELS[-1] == "emergency"
    assert M.LOG_LEVEL_RANK["warning"] > M.LOG_LEVEL_RANK["info"]


# ---------------------------------------------------------------- versions
def test_version_registry():
    assert V.LATEST == "2026-07-28"
    assert V.MODERN_VERSIONS[0] == "2026-07-28"
    assert V.LATEST_LEGACY == "2025-11-25"
    assert "2025-11-25" in V.LEGACY_VERSIONS and "2024-11-05" in V.LEGACY_VERSIONS


@pytest.mark.parametrize("version,era", [
    ("2026-07-28", "modern"), ("2025-11-25", "legacy"), ("2025-06-18", "legacy"),
    ("2025-03-26", "legacy"), ("2024-11-05", "legacy"), ("1900-01-01", None), ("", None),
])
def test_eras(version, era):
    assert V.era_of(version) == era
    assert V.is_modern(version) is (era == "modern")


def test_pick_version():
    assert V.pick_version(["2026-07-28", "2025-11-25"]) == "2026-07-28"
    assert V.pick_version(["2025-11-25"]) is None
    assert V.pick_version([]) is None
    assert V.pick_version(["a", "b"], ours=("b", "a")) == "b"
