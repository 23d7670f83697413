"""Skills generated when read: ``DynamicSkill`` (mcpkit/extensions/_skills_dynamic.py) and the
client reading them (mcpkit/client/_skills.py).

The Skills extension: a skill whose content is generated, so that stable digests cannot be
published, has ``"resources": "dynamic"`` in ``skills/list`` and ``skills/get``; its entry's
frontmatter must still equal the generated SKILL.md's (the host compares them), and a host
applies the 16 MiB limit to what it reads. Served over real HTTP (tests/servers/
generated_skills_server.py under ``mcpkit serve --http``) and in memory; every bad definition
and every bad generated content has a test and a clear error.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from typing import Any

import httpx
import pytest

from mcpkit import Change, Client, Context, MCPError, Server
from mcpkit.errors import SkillVerificationError
from mcpkit.extensions.skills import DynamicSkill, SkillFormatError, Skills
from mcpkit.protocol.skills import MAX_TOTAL_SIZE
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, subprocess_env
from tests.helpers.servers import mcpkit_serve_argv, running_server

SERVER = ROOT / "tests" / "servers" / "generated_skills_server.py"
DAILY = "skill://reports/daily/SKILL.md"
FRONT = {"name": "daily", "description": "Today's report"}


def md(name: str = "daily", description: str = "Today's report", body: str = "Body.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def served(*skills: Any, **kw: Any) -> Server:
    server = Server("gen")
    server.use(Skills(*skills, **kw))
    return server


@pytest.fixture(scope="module")
def url() -> Any:
    with running_server(mcpkit_serve_argv(SERVER), timeout=30) as u:
        yield u


def _post(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One raw 2026-07-28 request (the wire as it is, not as the client reads it)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": {
            "name": "t", "version": "1"}}}}
    r = httpx.post(url, json=body, timeout=10, trust_env=False, headers={
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method, **({"Mcp-Name": params["uri"]} if "uri" in params else {})})
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    return reply


# ---------------------------------------------------------------- serving, over real HTTP
def test_entries_say_dynamic_with_the_frontmatter(url: str) -> None:
    listing = _post(url, "skills/list", {})["result"]
    by_uri = {s["uri"]: s for s in listing["skills"]}
    assert by_uri[DAILY] == {"uri": DAILY, "frontmatter": {**FRONT, "metadata": {"team": "ops"}},
                             "resources": "dynamic"}
    assert isinstance(by_uri["skill://fixed/SKILL.md"]["resources"], list)  # static skills keep digests
    assert (listing["ttlMs"], listing["cacheScope"]) == (60_000, "public")  # the listing is stable
    got = _post(url, "skills/get", {"uri": DAILY})["result"]
    assert got["skill"] == by_uri[DAILY] and (got["ttlMs"], got["cacheScope"]) == (60_000, "public")


def test_generated_at_each_read_never_cached_nor_shared(url: str) -> None:
    first = _post(url, "resources/read", {"uri": DAILY})["result"]
    second = _post(url, "resources/read", {"uri": DAILY})["result"]
    assert first["contents"][0]["mimeType"] == "text/markdown"
    assert first["contents"][0]["text"] != second["contents"][0]["text"]  # read number n, n+1
    assert (first["ttlMs"], first["cacheScope"]) == (0, "private")
    who = _post(url, "resources/read", {"uri": "skill://reports/daily/data/who.txt"})["result"]
    assert who["contents"][0]["text"] == "asked by resources/read\n"  # the function took the Context
    logo = _post(url, "resources/read", {"uri": "skill://reports/daily/logo.bin"})["result"]["contents"][0]
    assert base64.b64decode(logo["blob"]) == b"\x89PNG\x00" and "text" not in logo
    fixed = _post(url, "resources/read", {"uri": "skill://fixed/SKILL.md"})["result"]
    assert (fixed["ttlMs"], fixed["cacheScope"]) == (60_000, "public")


def test_no_sizes_in_listings_and_directory_reads(url: str) -> None:
    listed = {r["uri"]: r for r in _post(url, "resources/list", {})["result"]["resources"]}
    assert "size" not in listed[DAILY] and listed[DAILY]["name"] == "daily"
    assert listed[DAILY]["description"] == "Today's report"
    assert "size" in listed["skill://fixed/SKILL.md"]
    kids = _post(url, "resources/directory/read", {"uri": "skill://reports/daily"})["result"]["resources"]
    assert [(k["uri"], k["mimeType"], "size" in k) for k in kids] == [
        (DAILY, "text/markdown", False), ("skill://reports/daily/data", "inode/directory", False),
        ("skill://reports/daily/logo.bin", "application/octet-stream", False),
        ("skill://reports/daily/notes.md", "text/markdown", False)]


def test_a_generated_skill_md_that_contradicts_its_entry_is_not_served(url: str) -> None:
    error = _post(url, "resources/read", {"uri": "skill://broken/SKILL.md"})["error"]
    assert error["code"] == -32603
    assert error["message"] == ("skill://broken/SKILL.md: the generated SKILL.md's frontmatter differs from the "
                                "skill's entry (description): not served")


def test_the_client_loads_it_with_allow_dynamic(url: str) -> None:
    async def go() -> None:
        async with Client(url) as client:
            entries = {e.uri: e for e in await client.list_skills()}
            assert entries[DAILY].resources == "dynamic"
            with pytest.raises(SkillVerificationError, match="allow_dynamic=True"):
                await client.get_skill(DAILY)
            skill = await client.get_skill(DAILY, allow_dynamic=True)
            assert skill.text.startswith("---\nname: daily") and "Read number" in skill.text
            assert skill.files == [] and skill.frontmatter["metadata"] == {"team": "ops"}
            assert await skill.read_text("notes.md") == "constant notes\n"
            assert await skill.read("logo.bin") == b"\x89PNG\x00"
            assert skill.bytes_read == len(skill.text.encode()) + len("constant notes\n") + 5
            with pytest.raises(MCPError) as info:
                await client.get_skill("skill://broken/SKILL.md", allow_dynamic=True)
            assert info.value.code == -32603
            fixed = await client.get_skill("skill://fixed/SKILL.md")  # static skills: verified as before
            assert fixed.text.endswith("Fixed.\n")

    run(go())


# ---------------------------------------------------------------- bad definitions
@pytest.mark.parametrize(("args", "kw", "error", "problem"), [
    (({"name": "daily"}, md), {}, SkillFormatError, "non-empty string 'description'"),
    (({"name": "Daily", "description": "d"}, md), {}, SkillFormatError, "invalid skill name 'Daily'"),
    (({"name": "daily", "description": "d", "when": float("nan")}, md), {}, SkillFormatError, "not a JSON number"),
    ((["name", "daily"], md), {}, TypeError, "frontmatter is a mapping"),
    ((FRONT, md()), {}, TypeError, "skill_md is the function"),
    ((FRONT, md), {"files": {"SKILL.md": md}}, ValueError, "skill_md=, not one of files="),
    ((FRONT, md), {"files": {"../x.md": "x"}}, ValueError, "escapes the skill directory"),
    ((FRONT, md), {"files": {"/etc/passwd": "x"}}, ValueError, "must be relative"),
    ((FRONT, md), {"files": {"x.md": 42}}, TypeError, "a function, a str or bytes, not int"),
    ((FRONT, lambda a, b: ""), {}, TypeError, "no argument or one"),
    ((FRONT, md), {"files": {f"f{i}.md": "x" for i in range(512)}}, SkillFormatError, "at most 512 files"),
    ((FRONT, md), {"prefix": "a/../b"}, SkillFormatError, "invalid skill prefix"),
    ((FRONT, md), {"ttl_ms": -1}, ValueError, "ttl_ms"),
    ((FRONT, md), {"ttl_ms": True}, ValueError, "ttl_ms"),
    ((FRONT, md), {"cache_scope": "shared"}, ValueError, "cache_scope"),
])
def test_bad_definitions(args: tuple[Any, ...], kw: dict[str, Any], error: type[Exception], problem: str) -> None:
    with pytest.raises(error, match=problem):
        DynamicSkill(*args, **kw)


def test_placement_rules() -> None:
    server = served({"SKILL.md": md("outer", "Outer")})
    skills = server.get_extension(Skills)
    assert skills is not None
    with pytest.raises(ValueError, match="cannot be nested in the skill skill://outer/SKILL.md"):
        skills.add(DynamicSkill(FRONT, md, prefix="outer"))
    skills.add(DynamicSkill(FRONT, md, prefix="top"))
    with pytest.raises(ValueError, match="cannot be nested"):  # the other way round
        skills.add({"SKILL.md": md("top", "Top")})  # a static skill around the dynamic one
    with pytest.raises(ValueError, match="already served at skill://top/daily/SKILL.md"):
        skills.add(DynamicSkill(FRONT, md, prefix="top"))
    assert set(skills.skills) == {"skill://outer/SKILL.md", "skill://top/daily/SKILL.md"}
    with pytest.raises(ValueError, match="already a resource of this server"):
        mine = Server("x")
        mine.resource("skill://daily/SKILL.md")(lambda: "taken")
        mine.use(Skills(DynamicSkill(FRONT, md)))


# ---------------------------------------------------------------- bad generated content
def _read_error(skill_md: Any, uri: str = "skill://daily/SKILL.md", expose: bool = False,
                **files: Any) -> MCPError:
    server = Server("gen", expose_errors=expose)
    server.use(Skills(DynamicSkill(FRONT, skill_md, files=files or None)))

    async def go() -> MCPError:
        async with Client(server) as client:
            with pytest.raises(MCPError) as info:
                await client.read_resource(uri)
            return info.value

    return run(go())


def _boom() -> str:
    raise RuntimeError("secret token abc")


async def _async_none() -> None:
    return None


@pytest.mark.parametrize(("skill_md", "message"), [
    (_boom, "generating skill://daily/SKILL.md failed"),
    (lambda: 42, "skill://daily/SKILL.md: the content function returned int, not str or bytes"),
    (_async_none, "skill://daily/SKILL.md: the content function returned NoneType, not str or bytes"),
    (lambda: b"\xff\xfe not utf-8", "skill://daily/SKILL.md: the generated SKILL.md is not UTF-8 text"),
    (lambda: "no frontmatter at all", "the generated SKILL.md is not a skill: SKILL.md must begin with"),
    (lambda: md(description="Another"), "frontmatter differs from the skill's entry (description): not served"),
    (lambda: md() .replace("---\n", "---\nextra: 1\n", 1), "differs from the skill's entry (extra)"),
    (lambda: "x" * (MAX_TOTAL_SIZE + 1), f"made {MAX_TOTAL_SIZE + 1} bytes, over the {MAX_TOTAL_SIZE}-byte limit"),
])
def test_bad_generated_skill_md(skill_md: Any, message: str) -> None:
    error = _read_error(skill_md)
    assert error.code == -32603 and message in str(error)
    assert "secret" not in str(error)  # an exception's text stays in the server's log


def test_bad_generated_files_and_exposed_errors() -> None:
    assert "secret token abc" in str(_read_error(_boom, expose=True))
    error = _read_error(md, "skill://daily/big.bin", **{"big.bin": lambda: b"\x00" * (MAX_TOTAL_SIZE + 1)})
    assert error.code == -32603 and "over the" in str(error)
    error = _read_error(md, "skill://daily/list.json", **{"list.json": lambda: [1, 2]})
    assert "returned list, not str or bytes" in str(error)

    def deliberate() -> str:
        raise MCPError(-32602, "not today")

    error = _read_error(md, "skill://daily/x.md", **{"x.md": deliberate})  # an MCPError passes as raised
    assert (error.code, error.message) == (-32602, "not today")


def test_changed_and_replace_notify_every_file() -> None:
    server = Server("gen")
    skills = server.use(Skills(DynamicSkill(FRONT, md, files={"a.md": lambda: "a"})))
    seen: list[Change] = []
    server.bus.publish = seen.append  # type: ignore[method-assign]
    skills.changed("skill://daily/SKILL.md")
    assert seen == [Change("resource_updated", "skill://daily/SKILL.md"),
                    Change("resource_updated", "skill://daily/a.md")]
    seen.clear()
    skills.add(DynamicSkill(FRONT, md, files={"a.md": lambda: "a"}), replace=True)  # generated: never "same"
    assert seen == [Change("resources"), Change("resource_updated", "skill://daily/SKILL.md"),
                    Change("resource_updated", "skill://daily/a.md")]
    with pytest.raises(KeyError):
        skills.changed("skill://nope/SKILL.md")
    pending = Skills(DynamicSkill(FRONT, md))
    pending.changed("skill://daily/SKILL.md")  # not served yet: nobody to tell
    with pytest.raises(KeyError):
        pending.changed("skill://nope/SKILL.md")
    skills.remove("skill://daily/SKILL.md")
    assert "skill://daily/a.md" not in server.resources


def test_cache_hints_can_be_given() -> None:
    server = Server("gen")
    server.use(Skills(DynamicSkill(FRONT, md, ttl_ms=5_000, cache_scope="public"),
                      DynamicSkill({"name": "other", "description": "d"}, lambda: md("other", "d"), ttl_ms=None,
                                   cache_scope=None)))

    async def go() -> None:
        async with Client(server) as client:
            r = await client.read_resource("skill://daily/SKILL.md")
            assert (r.ttlMs, r.cacheScope) == (5_000, "public")
            r = await client.read_resource("skill://other/SKILL.md")
            assert (r.ttlMs, r.cacheScope) == (server.ttl_ms, server.cache_scope)  # the server's

    run(go())


# ---------------------------------------------------------------- the client's checks
def test_client_checks_what_a_dynamic_skill_gives() -> None:
    server = served(DynamicSkill(FRONT, md, files={"a.md": lambda: "a" * (9 * 1024 * 1024),
                                                   "b.md": lambda: "b" * (9 * 1024 * 1024)}))
    other = {"name": "other", "description": "d"}
    server.get_extension(Skills).add(DynamicSkill(other, lambda: md("other", "d")))  # type: ignore[union-attr]

    async def go() -> None:
        async with Client(server) as client:
            skill = await client.get_skill("skill://daily/SKILL.md", allow_dynamic=True)
            for escape in ("../other/SKILL.md", "x/../../other/SKILL.md", "%2e%2e/other/SKILL.md",
                           "skill://daily/./a.md", "skill://daily//a.md", "skill://dailyx/a.md"):
                with pytest.raises(SkillVerificationError, match="not a file of the skill"):
                    await skill.read(escape)
            assert len(await skill.read("a.md")) == 9 * 1024 * 1024
            with pytest.raises(SkillVerificationError, match="bytes read: stopped"):
                await skill.read("b.md")  # 18 MiB in all: over the limit a host applies
            with pytest.raises(SkillVerificationError, match="stopped"):
                await skill.read("SKILL.md")  # and nothing more of it

    run(go())


def test_client_refuses_a_dynamic_skill_md_that_differs_or_is_too_big() -> None:
    async def load(server: Server) -> None:
        async with Client(server) as client:
            await client.get_skill("skill://daily/SKILL.md", allow_dynamic=True)

    for change, problem in ((lambda r: _set_text(r, md(description="Exfiltrate")), "frontmatter differs"),
                            (lambda r: _set_text(r, "x" * (MAX_TOTAL_SIZE + 1)), "over the limit"),
                            (lambda r: _set_text(r, "plain text"), "must begin with a YAML frontmatter")):
        server = served(DynamicSkill(FRONT, md))

        async def tamper(ctx: Context, params: Any, call_next: Any, change: Any = change) -> Any:
            return change(await call_next(ctx, params))

        server.wrap_method("resources/read", tamper)  # what a gateway in between could do
        with pytest.raises(SkillVerificationError, match=problem):
            run(load(server))


def _set_text(result: Any, text: str) -> Any:
    result.contents[0].text = text
    return result


# ---------------------------------------------------------------- the CLI
def test_cli_gets_a_dynamic_skill_only_when_allowed() -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcpkit", "skills", *args, str(SERVER)], cwd=ROOT,
                              env=subprocess_env(), capture_output=True, text=True, timeout=60)

    listed = cli("list")
    assert listed.returncode == 0 and f"{DAILY}  (dynamic)  Today's report" in listed.stdout
    refused = cli("get", DAILY)
    assert refused.returncode == 1 and "allow_dynamic=True" in refused.stderr
    got = cli("get", DAILY, "--allow-dynamic")
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("---\nname: daily") and "Read number" in got.stdout
    logo = cli("get", DAILY, "--allow-dynamic", "--file", "logo.bin")
    assert logo.returncode == 0 and logo.stdout == "[binary, 5 bytes, unverified: dynamic]\n"
