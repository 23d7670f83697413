"""The skills extension (``io.modelcontextprotocol/skills``, SEP-2640): mcpkit/extensions/skills.py
(server), mcpkit/client/_skills.py (client), mcpkit/cli/_skills.py (``mcpkit skills``).

Served in process and over stdio (examples/skills_server.py); then every bad input: bad names,
bad frontmatter, oversized skills, paths escaping the skill, unknown URIs, tampered content.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, Context, MCPError, Server
from mcpkit.errors import MCPKitError, SkillVerificationError
from mcpkit.extensions.skills import SkillDef, SkillFormatError, Skills
from tests.helpers.aio import run
from tests.helpers.paths import ROOT, subprocess_env

SKILL_MD = ("---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n"
            "license: Apache-2.0\nmetadata:\n  version: \"2.1.0\"\n  flag: yes\n---\n\n# PDF\n\nSee references/FORMS.md.\n")
PDF = {"SKILL.md": SKILL_MD, "references/FORMS.md": "forms\n", "templates/regional/eu.md": "eu\n",
       "logo.png": b"\x89PNG\r\n\x1a\n\x00\xff"}
URI = "skill://pdf-processing/SKILL.md"


def md(name: str, description: str = "A skill", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\nBody.\n"


def served(*skills: Any, **kw: Any) -> Server:
    server = Server("skills-test")
    server.use(Skills(*skills, **kw))
    return server


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def code_of(coro: Any) -> int:
    with pytest.raises(MCPError) as info:
        await coro
    return info.value.code


# ---------------------------------------------------------------- serving
def test_list_get_and_read_match_the_spec() -> None:
    server = served(PDF, directory_read=True, ttl_ms=300_000, cache_scope="public")

    async def go() -> None:
        async with Client(server) as client:
            card = await client.discover()
            assert card.capabilities.extensions == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
            assert card.capabilities.resources is not None  # the extension needs the resources capability
            listed = await client.request("skills/list", {})
            assert listed["resultType"] == "complete"
            assert (listed["ttlMs"], listed["cacheScope"]) == (300_000, "public")
            assert "nextCursor" not in listed
            [entry] = listed["skills"]
            assert entry["uri"] == URI
            # The frontmatter verbatim (YAML 1.2 plain scalars: `yes` stays a string).
            assert entry["frontmatter"] == {"name": "pdf-processing",
                                            "description": "Extract, fill, and assemble PDF documents",
                                            "license": "Apache-2.0", "metadata": {"version": "2.1.0", "flag": "yes"}}
            uris = [r["uri"] for r in entry["resources"]]
            assert uris[0] == URI and sorted(uris) == sorted(
                f"skill://pdf-processing/{p}" for p in PDF)
            for r in entry["resources"]:
                raw = PDF[r["uri"][len("skill://pdf-processing/"):]]
                data = raw.encode() if isinstance(raw, str) else raw
                assert (r["digest"], r["size"]) == (sha(data), len(data))
            got = await client.request("skills/get", {"uri": URI})
            assert got["skill"] == entry and "nextCursor" not in got
            assert (got["ttlMs"], got["cacheScope"]) == (300_000, "public")
            read = await client.read_resource(URI)
            assert read.contents[0].text == SKILL_MD and read.contents[0].mimeType == "text/markdown"
            png = await client.read_resource("skill://pdf-processing/logo.png")
            assert png.contents[0].blob and png.contents[0].mimeType == "image/png"
            resources = {r.uri: r for r in await client.list_resources()}
            assert resources[URI].name == "pdf-processing"
            assert resources[URI].description == "Extract, fill, and assemble PDF documents"
            assert resources[URI].size == len(SKILL_MD.encode())

    run(go())


def test_directory_read() -> None:
    server = served(PDF, directory_read=True)
    server.get_extension(Skills).add({"SKILL.md": md("refunds")}, prefix="acme/billing")  # type: ignore[union-attr]

    async def go() -> None:
        async with Client(server) as client:
            root = await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
            kids = {r["uri"]: r for r in root["resources"]}
            assert kids["skill://pdf-processing/templates"]["mimeType"] == "inode/directory"
            assert kids["skill://pdf-processing/references"]["mimeType"] == "inode/directory"
            assert kids[URI]["mimeType"] == "text/markdown" and kids[URI]["name"] == "SKILL.md"
            assert len(kids) == 4  # SKILL.md, logo.png, references, templates: direct children only
            sub = await client.request("resources/directory/read", {"uri": "skill://pdf-processing/templates"})
            assert [r["uri"] for r in sub["resources"]] == ["skill://pdf-processing/templates/regional"]
            prefix = await client.request("resources/directory/read", {"uri": "skill://acme"})
            assert [r["uri"] for r in prefix["resources"]] == ["skill://acme/billing"]
            for not_dir in (URI, "skill://pdf-processing/", "skill://nothing", "skill://pdf-processing/logo.png"):
                assert await code_of(client.request("resources/directory/read", {"uri": not_dir})) == -32602
            assert await code_of(client.request("resources/directory/read", {})) == -32602

    run(go())


def test_directory_read_is_not_served_unless_enabled() -> None:
    server = served(PDF)

    async def go() -> None:
        async with Client(server) as client:
            assert (await client.discover()).capabilities.extensions == {"io.modelcontextprotocol/skills": {}}
            assert await code_of(client.request("resources/directory/read", {"uri": "skill://pdf-processing"})) \
                == -32601

    run(go())


def test_pagination_and_bad_cursors() -> None:
    names = ["alpha", "bravo", "charlie"]
    server = served(*({"SKILL.md": md(n)} for n in names), page_size=2)

    async def go() -> None:
        async with Client(server) as client:
            first = await client.request("skills/list", {})
            assert [s["frontmatter"]["name"] for s in first["skills"]] == ["alpha", "bravo"]
            second = await client.request("skills/list", {"cursor": first["nextCursor"]})
            assert [s["frontmatter"]["name"] for s in second["skills"]] == ["charlie"]
            assert "nextCursor" not in second
            for bad in ("nonsense", "bWNwa2l0OnNraWxsczo5OQ", ""):
                assert await code_of(client.request("skills/list", {"cursor": bad})) == -32602
            assert [e.frontmatter["name"] for e in await client.list_skills()] == names

    run(go())


def test_unknown_uris_are_invalid_params() -> None:
    server = served(PDF)

    async def go() -> None:
        async with Client(server) as client:
            for uri in ("skill://nope/SKILL.md", "skill://pdf-processing", "skill://pdf-processing/logo.png",
                        "skill://pdf-processing/references/FORMS.md", "file:///etc/passwd"):
                assert await code_of(client.request("skills/get", {"uri": uri})) == -32602
            assert await code_of(client.request("skills/get", {})) == -32602
            assert await code_of(client.request("skills/get", {"uri": 5})) == -32602
            assert await code_of(client.read_resource("skill://pdf-processing/missing.md")) == -32602

    run(go())


def test_add_remove_after_install() -> None:
    server = served()
    skills = server.get_extension(Skills)
    assert skills is not None
    sdef = skills.add({"SKILL.md": md("late"), "a.txt": "a"})
    assert sdef.uri in server.resources and "skill://late/a.txt" in server.resources
    with pytest.raises(ValueError, match="already served"):
        skills.add({"SKILL.md": md("late")})
    skills.remove(sdef.uri)
    assert sdef.uri not in server.resources and not skills.skills


def test_a_skill_cannot_take_over_another_resource() -> None:
    server = Server("s")

    @server.resource("skill://taken/SKILL.md")
    def taken() -> str:
        return "mine"

    with pytest.raises(ValueError, match="already a resource"):
        server.use(Skills({"SKILL.md": md("taken")}))


# ---------------------------------------------------------------- directories on disk
def write_skill(root: Path, name: str, files: dict[str, str | bytes] | None = None) -> Path:
    d = root / name
    (d / "references").mkdir(parents=True)
    (d / "SKILL.md").write_text(md(name))
    (d / "references" / "guide.md").write_text("guide\n")
    for path, content in (files or {}).items():
        p = d / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.encode() if isinstance(content, str) else content)
    return d


def test_skill_directory(tmp_path: Path) -> None:
    d = write_skill(tmp_path, "from-disk", {".env": "SECRET=1", "__pycache__/x.pyc": b"\0", "my notes.md": "n"})
    sdef = SkillDef.from_directory(d)
    assert sorted(f.path for f in sdef.files.values()) == ["SKILL.md", "my notes.md", "references/guide.md"]
    assert "skill://from-disk/my%20notes.md" in sdef.files  # file names are URI-encoded
    hidden = SkillDef.from_directory(d, include_hidden=True)
    assert "skill://from-disk/.env" in hidden.files


def test_directory_name_must_be_the_skill_name(tmp_path: Path) -> None:
    d = write_skill(tmp_path, "right")
    d.rename(tmp_path / "wrong")
    with pytest.raises(SkillFormatError, match="must equal its directory name"):
        SkillDef.from_directory(tmp_path / "wrong")
    with pytest.raises(SkillFormatError, match="not a skill directory"):
        SkillDef.from_directory(tmp_path)


def test_symlinks_leading_out_of_the_skill_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    d = write_skill(tmp_path, "linked")
    os.symlink(outside, d / "leak.txt")
    with pytest.raises(ValueError, match="escapes the skill directory"):
        SkillDef.from_directory(d)
    (d / "leak.txt").unlink()
    os.symlink(tmp_path, d / "up")
    with pytest.raises(ValueError, match="symlinked directories"):
        SkillDef.from_directory(d)
    (d / "up").unlink()
    os.symlink(d / "references" / "guide.md", d / "alias.md")  # inside: followed
    assert "skill://linked/alias.md" in SkillDef.from_directory(d).files


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", ["Bad", "-lead", "trail-", "dou--ble", "a" * 65, "under_score", "dot.ted",
                                  "spa ce", "ünï", "'12345678901234567890123456789012345678901234567890123456789012345'"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(SkillFormatError, match="invalid skill name"):
        SkillDef({"SKILL.md": md(name)})


@pytest.mark.parametrize("name", ["a", "a1", "pdf-processing", "x" * 64, "0-9"])
def test_good_names(name: str) -> None:
    assert SkillDef({"SKILL.md": md(name)}).uri == f"skill://{name}/SKILL.md"


@pytest.mark.parametrize(("text", "error"), [
    ("no frontmatter\n", "must begin with a YAML frontmatter"),
    ("---\nname: x\n---\n", "non-empty string 'description'"),
    ("---\ndescription: d\n---\n", "non-empty string 'name'"),
    ("---\nname: x\ndescription: '   '\n---\n", "non-empty string 'description'"),
    ("---\nname: [x\ndescription: d\n---\n", "not valid YAML"),
    ("---\n- a\n- b\n---\n", "must be a YAML mapping"),
    ("---\nname: x\nname: y\ndescription: d\n---\n", "duplicate frontmatter key"),
    ("---\nname: x\ndescription: d\nblob: !!binary aGk=\n---\n", "is not JSON"),
    ("---\nname: x\ndescription: d\n1: one\n---\n", "is not a string"),
    ("---\nname: x\ndescription: d\nn: .nan\n---\n", "not a JSON number"),
])
def test_bad_frontmatter_is_refused(text: str, error: str) -> None:
    with pytest.raises(SkillFormatError, match=error):
        SkillDef({"SKILL.md": text})


def test_frontmatter_is_yaml_1_2_plain() -> None:
    sdef = SkillDef({"SKILL.md": md("x", extra="on: on\nwhen: 2026-01-01\nok: true\nn: 3\n")})
    assert sdef.frontmatter == {"name": "x", "description": "A skill", "on": "on", "when": "2026-01-01",
                                "ok": True, "n": 3}


def test_skill_md_is_required_and_utf8() -> None:
    with pytest.raises(SkillFormatError, match="SKILL.md at its root"):
        SkillDef({"README.md": "x"})
    with pytest.raises(SkillFormatError, match="UTF-8"):
        SkillDef({"SKILL.md": b"---\nname: x\ndescription: \xff\n---\n"})


@pytest.mark.parametrize("path", ["../escape.md", "a/../../b", "/etc/passwd", "a//b", "./a", "a\\b", "C:x",
                                  "a/..", "", "nul\x00"])
def test_paths_escaping_the_skill_are_refused(path: str) -> None:
    with pytest.raises(ValueError):
        SkillDef({"SKILL.md": md("x"), path: "x"})


@pytest.mark.parametrize("prefix", ["a b", "..", "a/../b", "a//b", "ü", "a?b", "a#b"])
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(SkillFormatError, match="invalid skill prefix"):
        SkillDef({"SKILL.md": md("x")}, prefix=prefix)


def test_oversized_skills_are_refused(tmp_path: Path) -> None:
    many = {"SKILL.md": md("many"), **{f"f{i}.txt": "x" for i in range(512)}}
    with pytest.raises(SkillFormatError, match="at most 512 files"):
        SkillDef(many)
    assert len(SkillDef({k: v for k, v in list(many.items())[:512]}).files) == 512  # the limit itself is fine
    with pytest.raises(SkillFormatError, match="at most 16777216 bytes"):
        SkillDef({"SKILL.md": md("big"), "big.bin": b"\0" * (16 * 1024 * 1024)})
    d = write_skill(tmp_path, "big-dir")
    with open(d / "huge.bin", "wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)  # sparse: refused from its size, before it is read
    with pytest.raises(SkillFormatError, match="at most 16777216 bytes"):
        SkillDef.from_directory(d)


def test_bad_constructor_arguments() -> None:
    with pytest.raises(TypeError):
        Skills(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Skills(ttl_ms=-1)
    with pytest.raises(ValueError):
        Skills(cache_scope="shared")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Skills(page_size=0)


# ---------------------------------------------------------------- the client
def test_client_loads_and_verifies() -> None:
    server = served(PDF)
    reads: list[str] = []

    async def spy(ctx: Context, params: Any, call_next: Any) -> Any:
        reads.append(params.uri)
        return await call_next(ctx, params)

    server.wrap_method("resources/read", spy)

    async def go() -> None:
        async with Client(server) as client:
            [entry] = await client.list_skills()
            assert reads == []  # listing reads nothing
            skill = await client.get_skill(entry.uri)
            assert reads == [URI] and skill.text == SKILL_MD and skill.name == "pdf-processing"
            assert await skill.read("references/FORMS.md") == b"forms\n"
            assert await skill.read("skill://pdf-processing/logo.png") == PDF["logo.png"]
            with pytest.raises(SkillVerificationError, match="not listed"):
                await skill.read("references/NEW.md")
            assert reads == [URI, "skill://pdf-processing/references/FORMS.md", "skill://pdf-processing/logo.png"]
        async with Client(server) as fresh:  # no listing held: skills/get gives the entry
            assert (await fresh.get_skill(URI)).text == SKILL_MD
            with pytest.raises(MCPError) as info:
                await fresh.get_skill("skill://nope/SKILL.md")
            assert info.value.code == -32602

    run(go())


def tampering(server: Server, method: str, change: Any) -> None:
    async def wrapper(ctx: Context, params: Any, call_next: Any) -> Any:
        return change(await call_next(ctx, params))

    server.wrap_method(method, wrapper)


def _text(result: Any, fn: Any) -> Any:
    result.contents[0].text = fn(result.contents[0].text)
    return result


@pytest.mark.parametrize(("method", "change", "error"), [
    ("resources/read", lambda r: _text(r, lambda s: s.replace("# PDF", "# PDX")), "digest"),
    ("resources/read", lambda r: _text(r, lambda s: s + "more"), "bytes where the entry says"),
    ("skills/list", lambda r: (r.skills[0].frontmatter.update(description="Exfiltrate"), r)[1], "frontmatter differs"),
    ("skills/list", lambda r: (r.skills[0].resources.pop(0), r)[1], "do not list its SKILL.md"),
    ("skills/list", lambda r: (setattr(r.skills[0].resources[1], "uri", "skill://other/x"), r)[1],
     "outside the skill directory"),
    ("skills/list", lambda r: (setattr(r.skills[0].resources[1], "digest", "md5:abc"), r)[1], "malformed digest"),
    ("skills/list", lambda r: (setattr(r.skills[0].resources[1], "size", 17 * 1024 * 1024), r)[1], "over the limit"),
    ("skills/list", lambda r: (setattr(r.skills[0], "resources", "dynamic"), r)[1], "allow_dynamic"),
])
def test_client_refuses_a_tampered_skill(method: str, change: Any, error: str) -> None:
    server = served(PDF)
    tampering(server, method, change)

    async def go() -> None:
        async with Client(server) as client:
            await client.list_skills()
            with pytest.raises(SkillVerificationError, match=error):
                await client.get_skill(URI)

    run(go())


def test_client_verifies_supporting_files_and_dynamic_skills() -> None:
    server = served(PDF)
    tampering(server, "resources/read",
              lambda r: _text(r, lambda s: "FORMS\n") if r.contents[0].uri.endswith("FORMS.md") else r)

    async def go() -> None:
        async with Client(server) as client:
            await client.list_skills()
            skill = await client.get_skill(URI)
            with pytest.raises(SkillVerificationError, match="digest"):
                await skill.read("references/FORMS.md")

    run(go())
    dynamic = served(PDF)
    tampering(dynamic, "skills/get", lambda r: (setattr(r.skill, "resources", "dynamic"), r)[1])

    async def go_dynamic() -> None:
        async with Client(dynamic) as client:
            skill = await client.get_skill(URI, allow_dynamic=True)
            assert skill.files == [] and await skill.read("references/FORMS.md") == b"forms\n"
            with pytest.raises(SkillVerificationError, match="not a file of the skill"):
                await skill.read("skill://elsewhere/x")

    run(go_dynamic())


def test_client_needs_the_extension() -> None:
    async def go() -> None:
        async with Client(Server("plain")) as client:
            with pytest.raises(MCPKitError, match="does not declare"):
                await client.list_skills()
            with pytest.raises(MCPKitError, match="does not declare"):
                await client.get_skill(URI)

    run(go())


# ---------------------------------------------------------------- over stdio: the example and the CLI
def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpkit", *args], cwd=ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=60)


def test_cli_skills_list_and_get() -> None:
    listed = cli("skills", "list", "examples/skills_server.py")
    assert listed.returncode == 0, listed.stderr
    assert "skill://git-workflow/SKILL.md  (2 files)  Follow this team's Git conventions" in listed.stdout
    assert "skill://acme/support/refunds/SKILL.md" in listed.stdout
    got = cli("skills", "get", "skill://git-workflow/SKILL.md", "examples/skills_server.py")
    assert got.returncode == 0 and got.stdout == (ROOT / "examples/skills/git-workflow/SKILL.md").read_text()
    ref = cli("skills", "get", "skill://git-workflow/SKILL.md", "--file", "references/commits.md",
              "examples/skills_server.py")
    assert ref.returncode == 0 and ref.stdout.startswith("# Commit messages")
    unlisted = cli("skills", "get", "skill://git-workflow/SKILL.md", "--file", "../secret", "examples/skills_server.py")
    assert unlisted.returncode == 1 and "not listed in the entry" in unlisted.stderr
    unknown = cli("skills", "get", "skill://nope/SKILL.md", "examples/skills_server.py")
    assert unknown.returncode == 1 and "No skill is served at skill://nope/SKILL.md" in unknown.stderr
    as_json = cli("skills", "list", "--json", "examples/skills_server.py")
    assert as_json.returncode == 0 and '"digest": "sha256:' in as_json.stdout
    assert cli("skills", "frob", "examples/skills_server.py").returncode == 2
    assert cli("skills", "get", "examples/skills_server.py").returncode == 2


def test_cli_skills_on_a_server_without_them() -> None:
    out = cli("skills", "list", "examples/demo.py")
    assert out.returncode == 1 and "does not declare the io.modelcontextprotocol/skills extension" in out.stderr
