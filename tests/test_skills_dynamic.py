"""Skills that change while the server runs: ``Skills.add`` (also ``replace=True``) and
``Skills.remove`` at runtime (mcpkit/extensions/skills.py), the notifications they send and
what they do to a client's cache.

The Skills extension defines no notification of its own (it declined
``notifications/skills/list_changed``): skill files are resources, so a change is one
``notifications/resources/list_changed`` (``Server.batch_changes`` coalesces a skill's files),
plus ``notifications/resources/updated`` for each file whose content changed or that is gone.
Checked on the bus, through ``subscriptions/listen`` (2026-07-28, over real HTTP) and pushed
on a 2025-11-25 stdio session.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest

from mcpkit import Change, Client, MCPError, Server
from mcpkit.extensions.skills import Skills
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, subprocess_env
from tests.helpers.servers import mcpkit_serve_argv, running_server

SERVER = ROOT / "tests" / "servers" / "dynamic_skills_server.py"


def md(name: str, body: str = "Body.") -> str:
    return f"---\nname: {name}\ndescription: The {name} skill\n---\n{body}\n"


def recording() -> tuple[Server, Skills, list[Change]]:
    server = Server("s")
    skills = server.use(Skills())
    seen: list[Change] = []
    server.bus.publish = seen.append  # type: ignore[method-assign]
    return server, skills, seen


def test_one_list_changed_per_change_and_updates_for_changed_files() -> None:
    server, skills, seen = recording()
    skills.add({"SKILL.md": md("a"), "x.md": "x", "y.md": "y", "z.md": "z"})
    assert seen == [Change("resources")]
    seen.clear()
    skills.add({"SKILL.md": md("a"), "x.md": "x", "y.md": "Y"}, replace=True)  # y changed, z gone, x same
    assert seen == [Change("resources"), Change("resource_updated", "skill://a/y.md"),
                    Change("resource_updated", "skill://a/z.md")]
    assert "skill://a/z.md" not in server.resources

    async def read(uri: str) -> str:
        async with Client(server) as client:
            return str((await client.read_resource(uri)).contents[0].text)

    assert run(read("skill://a/y.md")) == "Y"
    seen.clear()
    skills.remove("skill://a/SKILL.md")
    assert seen[0] == Change("resources") and len(seen) == 4
    assert {c.uri for c in seen[1:]} == {"skill://a/SKILL.md", "skill://a/x.md", "skill://a/y.md"}
    assert not [u for u in server.resources if u.startswith("skill://")]


def test_batches_nest_and_publish_once() -> None:
    server, skills, seen = recording()
    with server.batch_changes():
        skills.add({"SKILL.md": md("a")})
        skills.add({"SKILL.md": md("b")})
        server.notify_tools_changed()
        assert seen == []
    assert seen == [Change("resources"), Change("tools")]


def test_bad_runtime_changes_change_nothing() -> None:
    server, skills, seen = recording()
    skills.add({"SKILL.md": md("a"), "shared.md": "s"})
    skills.add({"SKILL.md": md("b"), "x.md": "x"}, prefix="a")  # nested under a: shares nothing
    seen.clear()
    with pytest.raises(ValueError, match="already served"):
        skills.add({"SKILL.md": md("a")})
    with pytest.raises(KeyError):
        skills.remove("skill://nope/SKILL.md")

    @server.resource("skill://c/SKILL.md")
    def taken() -> str:
        return "mine"

    seen.clear()
    with pytest.raises(ValueError, match="already a resource"):
        skills.add({"SKILL.md": md("c")})
    # Replacing a skill's file that a nested skill also serves, with other content, is refused.
    with pytest.raises(ValueError, match="another skill with other content"):
        skills.add({"SKILL.md": md("a"), "b/x.md": "other"}, replace=True)
    assert seen == [] and set(skills.skills) == {"skill://a/SKILL.md", "skill://a/b/SKILL.md"}
    assert "skill://a/shared.md" in server.resources and "skill://a/b/x.md" in server.resources


def test_before_install_add_replace_remove() -> None:
    skills = Skills({"SKILL.md": md("a")})
    with pytest.raises(ValueError, match="already served"):
        skills.add({"SKILL.md": md("a")})
    skills.add({"SKILL.md": md("a", "New.")}, replace=True)
    skills.add({"SKILL.md": md("b")})
    skills.remove("skill://b/SKILL.md")
    with pytest.raises(KeyError):
        skills.remove("skill://b/SKILL.md")
    server = Server("s")
    server.use(skills)
    assert list(skills.skills) == ["skill://a/SKILL.md"]
    assert skills.skills["skill://a/SKILL.md"].files["skill://a/SKILL.md"].data.endswith(b"New.\n")


async def until(pred: Any, what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_listening_client_over_http_sees_changes_and_its_cache_follows() -> None:
    with running_server(mcpkit_serve_argv(SERVER), timeout=30) as url:
        async def go() -> None:
            async with Client(url) as client:
                notes: list[Any] = []

                async def consume() -> None:
                    async for note in client.listen(resources_list=True, resources=["skill://second/notes.md"]):
                        notes.append(note)

                task = asyncio.ensure_future(consume())
                try:
                    deadline = time.monotonic() + 15
                    while (await client.call_tool("bus_size")).structuredContent["result"] != 1:
                        assert time.monotonic() < deadline
                        await asyncio.sleep(0.02)
                    await client.call_tool("add_skill", {"name": "second", "body": "Two."})
                    await until(lambda: len(notes) >= 1, "list_changed")
                    await asyncio.sleep(0.2)
                    assert [n.method for n in notes] == ["notifications/resources/list_changed"]
                    assert {s.uri for s in await client.list_skills()} == {"skill://first/SKILL.md",
                                                                           "skill://second/SKILL.md"}
                    first = await client.read_resource("skill://second/notes.md")  # cached: ttl 60 s, public
                    assert first.contents[0].text == "notes of second\n"
                    loaded = await client.get_skill("skill://second/SKILL.md")
                    assert loaded.text.endswith("Two.\n")

                    notes.clear()
                    await client.call_tool("add_skill", {"name": "second", "body": "Deux.", "replace": True})
                    await until(lambda: len(notes) >= 1, "list_changed")
                    await asyncio.sleep(0.2)
                    # SKILL.md changed, notes.md (the one subscribed to) did not: no update for it.
                    assert [n.method for n in notes] == ["notifications/resources/list_changed"]
                    cached = await client.read_resource("skill://second/notes.md")
                    assert cached.contents[0].text == "notes of second\n"
                    refreshed = await client.get_skill("skill://second/SKILL.md", refresh=True)
                    assert refreshed.text.endswith("Deux.\n")

                    notes.clear()
                    await client.call_tool("remove_skill", {"name": "second"})
                    await until(lambda: any(n.method == "notifications/resources/updated" for n in notes), "updated")
                    assert notes[0].method == "notifications/resources/list_changed"
                    assert [n.params["uri"] for n in notes[1:]] == ["skill://second/notes.md"]
                    # The cached read was dropped by the update: reading again asks the server.
                    with pytest.raises(MCPError) as gone:
                        await client.read_resource("skill://second/notes.md")
                    assert gone.value.code == -32602
                finally:
                    task.cancel()

        run(go())


def test_legacy_session_is_told() -> None:
    argv = [sys.executable, "-m", "mcpkit", "serve", str(SERVER)]
    notes: list[tuple[str, dict[str, Any]]] = []

    async def go() -> None:
        async with Client(argv, mode="legacy", env=subprocess_env(),
                          on_notification=lambda m, p: notes.append((m, p))) as client:
            assert client.era == "legacy"
            await client.call_tool("add_skill", {"name": "late", "body": "Late."})
            await until(lambda: any(m == "notifications/resources/list_changed" for m, _ in notes), "list_changed")
            assert [m for m, _ in notes].count("notifications/resources/list_changed") == 1
            assert "skill://late/SKILL.md" in {s.uri for s in await client.list_skills()}

    run(go())
