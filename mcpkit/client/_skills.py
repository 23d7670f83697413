"""The skills extension, client side: ``io.modelcontextprotocol/skills`` (SEP-2640).

``await client.list_skills()`` pages through ``skills/list`` and returns the entries; nothing
is read (no prefetch). ``await client.get_skill(uri)`` loads one skill: it takes the entry
held from the listing (or asks ``skills/get`` for it), reads its ``SKILL.md``, and checks the
bytes against the entry's size and digest and the file's frontmatter against the entry's,
field by field; any mismatch raises :class:`~mcpkit.errors.SkillVerificationError` and
nothing of the skill is used. The :class:`LoadedSkill` it returns reads supporting files the
same way, and only files the held entry lists::

    for entry in await client.list_skills():
        print(entry.uri, entry.frontmatter["description"])
    skill = await client.get_skill("skill://pdf-processing/SKILL.md")
    print(skill.text)
    forms = await skill.read("references/FORMS.md")       # verified against the entry

The server must declare the extension (``server/discover`` or ``initialize``); skills whose
entry exceeds the limits (512 files, 16 MiB) are declined with the reason. A ``"dynamic"``
skill (no digests) loads only with ``allow_dynamic=True``: its frontmatter is still compared,
and what is read counts against the 16 MiB limit.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import MCPKitError, ProtocolError, SkillVerificationError
from ..frontmatter import parse_frontmatter
from ..protocol import skills as S

if TYPE_CHECKING:
    from ..protocol import types as t

__all__ = ["LoadedSkill"]


def check_entry(entry: S.Skill) -> None:
    """Refuse an entry that breaks the rules, before anything of it is read."""
    name = entry.frontmatter.get("name")
    if not isinstance(name, str) or not isinstance(entry.frontmatter.get("description"), str):
        raise SkillVerificationError(f"{entry.uri}: the entry's frontmatter lacks a name or a description")
    if S.skill_name_of(entry.uri) != name:
        raise SkillVerificationError(f"{entry.uri}: the URI does not end in /{name}/SKILL.md (frontmatter name)")
    if entry.resources == "dynamic":
        return
    root = S.skill_root(entry.uri) + "/"
    seen: set[str] = set()
    for r in entry.resources:
        if r.uri in seen:
            raise SkillVerificationError(f"{entry.uri}: {r.uri} is listed twice")
        seen.add(r.uri)
        if not r.uri.startswith(root) or "/../" in r.uri[len(root) - 1:] or r.uri.endswith("/.."):
            raise SkillVerificationError(f"{entry.uri}: {r.uri} is outside the skill directory")
        if not S.DIGEST_RE.match(r.digest) or r.size < 0:
            raise SkillVerificationError(f"{entry.uri}: {r.uri} has a malformed digest or size")
    if entry.uri not in seen:
        raise SkillVerificationError(f"{entry.uri}: the entry's resources do not list its SKILL.md")
    if len(entry.resources) > S.MAX_RESOURCES:
        raise SkillVerificationError(f"{entry.uri}: {len(entry.resources)} files, over the limit of "
                                     f"{S.MAX_RESOURCES}: not loaded")
    total = sum(r.size for r in entry.resources)
    if total > S.MAX_TOTAL_SIZE:
        raise SkillVerificationError(f"{entry.uri}: {total} bytes in all, over the limit of "
                                     f"{S.MAX_TOTAL_SIZE}: not loaded")


def _inside(uri: str, root: str) -> bool:
    """``uri`` names a file under the skill directory ``root`` (no ``.``/``..``/empty segment,
    percent-encoded or not): a dynamic skill has no list of files to hold it to."""
    from urllib.parse import unquote

    if not uri.startswith(root + "/"):
        return False
    return all(unquote(seg) not in ("", ".", "..") for seg in uri[len(root) + 1:].split("/"))


def _bytes_of(result: t.ReadResourceResult, uri: str) -> bytes:
    contents = [c for c in result.contents if c.uri == uri] or list(result.contents)
    if len(contents) != 1:
        raise SkillVerificationError(f"{uri}: expected one content item, got {len(result.contents)}")
    c = contents[0]
    if isinstance(c.text, str):
        return c.text.encode("utf-8")
    if isinstance(c.blob, str):
        try:
            return base64.b64decode(c.blob, validate=True)
        except ValueError:
            raise SkillVerificationError(f"{uri}: the blob is not base64") from None
    raise SkillVerificationError(f"{uri}: the content has neither text nor blob")


class LoadedSkill:
    """A skill whose SKILL.md was read and verified: ``entry``, ``text``, ``frontmatter``;
    :meth:`read` reads its other files under the same entry."""

    def __init__(self, client: Any, entry: S.Skill, text: str) -> None:
        self._client = client
        self.entry = entry
        self.uri = entry.uri
        self.root = S.skill_root(entry.uri)
        self.text = text
        self.frontmatter = entry.frontmatter
        self.name: str = entry.frontmatter["name"]
        #: Bytes read so far (the limit for a dynamic skill).
        self.bytes_read = len(text.encode("utf-8"))

    @property
    def files(self) -> list[str]:
        """The URIs the entry lists (empty for a dynamic skill)."""
        return [] if self.entry.resources == "dynamic" else [r.uri for r in self.entry.resources]

    def resolve(self, path_or_uri: str) -> str:
        """A relative path (resolved against the skill root) or a full URI."""
        if "://" in path_or_uri:
            return path_or_uri
        return f"{self.root}/{path_or_uri.lstrip('/')}"

    async def read(self, path_or_uri: str) -> bytes:
        """Read one file of the skill, verified against the held entry (a file the entry does
        not list is refused: :class:`SkillVerificationError`)."""
        uri = self.resolve(path_or_uri)
        if self.entry.resources == "dynamic":
            if not _inside(uri, self.root):
                raise SkillVerificationError(f"{uri} is not a file of the skill {self.uri}")
            data = _bytes_of(await self._client.read_resource(uri), uri)
            if self.bytes_read + len(data) > S.MAX_TOTAL_SIZE:
                self.bytes_read = S.MAX_TOTAL_SIZE + 1  # nothing more of this skill is read
                raise SkillVerificationError(f"{self.uri}: over {S.MAX_TOTAL_SIZE} bytes read: stopped")
            self.bytes_read += len(data)
            return data
        listed = {r.uri: r for r in self.entry.resources}
        want = listed.get(uri)
        if want is None:
            raise SkillVerificationError(f"{uri} is not listed in the entry of {self.uri}: refused (the skill may "
                                         "have changed; get_skill(uri, refresh=True) fetches the current entry)")
        return await _verified(self._client, want)

    async def read_text(self, path_or_uri: str) -> str:
        """:meth:`read`, decoded as UTF-8."""
        return (await self.read(path_or_uri)).decode("utf-8")


def _hinted(raw: Any) -> Any:
    """A result without cache hints (a 2025-11-25 session carries none): stale at once, never shared."""
    if isinstance(raw, dict) and ("ttlMs" not in raw or "cacheScope" not in raw):
        return {"ttlMs": 0, "cacheScope": "private", **raw}
    return raw


def _matches(data: bytes, want: S.SkillResource) -> bool:
    return len(data) == want.size and S.digest(data) == want.digest


async def _verified(client: Any, want: S.SkillResource) -> bytes:
    """The file's bytes, verified against the entry. A cached copy that does not match (the
    skill changed since it was read) is not an error: it is fetched again, and only what the
    server answers then is judged, as the extension says of a host's cache."""
    data = _bytes_of(await client.read_resource(want.uri, cache="use"), want.uri)
    if not _matches(data, want):
        data = _bytes_of(await client.read_resource(want.uri, cache="refresh"), want.uri)
    if len(data) != want.size:
        raise SkillVerificationError(f"{want.uri}: {len(data)} bytes where the entry says {want.size}: "
                                     "not used (tampered with or stale)")
    if S.digest(data) != want.digest:
        raise SkillVerificationError(f"{want.uri}: the content does not match the entry's digest: "
                                     "not used (tampered with or stale)")
    return data


# What :class:`~mcpkit.client._skills_api.SkillsApi` (a base class of the Client) runs.


def held_skills(client: Any) -> dict[str, S.Skill]:
    held: dict[str, S.Skill] = client.__dict__.setdefault("_skill_entries", {})
    return held


async def skills_settings(client: Any) -> dict[str, Any] | None:
    api: Any = client
    caps = (await api.discover()).capabilities
    ext = caps.extensions if isinstance(caps.extensions, Mapping) else {}
    value = ext.get(S.EXTENSION_ID)
    return value if isinstance(value, dict) else None


async def need_extension(client: Any) -> None:
    if await skills_settings(client) is None:
        raise MCPKitError(f"the server does not declare the {S.EXTENSION_ID} extension")


async def list_skills(client: Any) -> list[S.Skill]:
    await need_extension(client)
    api: Any = client
    out: list[S.Skill] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        raw = await api.request("skills/list", {"cursor": cursor} if cursor else {})
        try:
            page = msgspec.convert(_hinted(raw), S.ListSkillsResult)
        except msgspec.ValidationError as exc:
            raise ProtocolError(f"skills/list: malformed result: {exc}") from None
        out.extend(page.skills)
        nxt = page.nextCursor if isinstance(page.nextCursor, str) and page.nextCursor else None
        if nxt is None:
            break
        if nxt in seen:
            raise ProtocolError("skills/list: the server repeated a cursor")
        seen.add(nxt)
        cursor = nxt
    held = held_skills(client)
    for entry in out:
        held[entry.uri] = entry
    return out


async def get_skill_entry(client: Any, uri: str) -> S.Skill:
    await need_extension(client)
    api: Any = client
    raw = await api.request("skills/get", {"uri": uri})
    try:
        entry = msgspec.convert(_hinted(raw), S.GetSkillResult).skill
    except msgspec.ValidationError as exc:
        raise ProtocolError(f"skills/get: malformed result: {exc}") from None
    if entry.uri != uri:
        raise SkillVerificationError(f"skills/get {uri} answered the entry of {entry.uri}")
    held_skills(client)[uri] = entry
    return entry


async def get_skill(client: Any, uri: str, refresh: bool, allow_dynamic: bool) -> LoadedSkill:
    entry = None if refresh else held_skills(client).get(uri)
    if entry is None:
        entry = await get_skill_entry(client, uri)
    check_entry(entry)
    if entry.resources == "dynamic":
        if not allow_dynamic:
            raise SkillVerificationError(f"{uri}: a dynamic skill (no digests) is loaded only with allow_dynamic=True")
        api: Any = client
        data = _bytes_of(await api.read_resource(uri), uri)
        if len(data) > S.MAX_TOTAL_SIZE:
            raise SkillVerificationError(f"{uri}: {len(data)} bytes, over the limit of {S.MAX_TOTAL_SIZE} "
                                         "for a skill: not loaded")
    else:
        want = next(r for r in entry.resources if r.uri == uri)
        data = await _verified(client, want)
    try:
        text = data.decode("utf-8")
        found = parse_frontmatter(text)
    except (UnicodeDecodeError, S.SkillFormatError) as exc:
        raise SkillVerificationError(f"{uri}: {exc}: not loaded") from None
    fields = S.frontmatter_differences(found, entry.frontmatter)
    if fields:
        raise SkillVerificationError(f"{uri}: the SKILL.md frontmatter differs from the entry's "
                                     f"({', '.join(fields)}): not loaded")
    return LoadedSkill(client, entry, text)
