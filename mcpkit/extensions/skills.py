"""The skills extension, server side: ``io.modelcontextprotocol/skills`` (SEP-2640).

A skill is a directory of files with a ``SKILL.md`` at its root whose YAML frontmatter holds at
least ``name`` and ``description``. Install the extension with the skills to serve::

    from mcpkit.extensions.skills import Skills

    server = Server("docs")
    skills = server.use(Skills("skills/pdf-processing", directory_read=True))
    skills.add("skills/refunds", prefix="acme/billing")      # skill://acme/billing/refunds/SKILL.md
    skills.add({"SKILL.md": "---\\nname: hello\\ndescription: Say hello\\n---\\nSay hello.\\n"})

What it serves, as the specification says:

- every file as a resource ``skill://<prefix>/<name>/<path>`` (``resources/read``; listed in
  ``resources/list``); the ``SKILL.md`` resource is ``text/markdown`` with the frontmatter's
  ``name`` and ``description``;
- ``skills/list`` (paginated, ``ttlMs``/``cacheScope`` on 2026-07-28) and ``skills/get``
  (``-32602`` for a URI that is not a served skill's SKILL.md): entries with the frontmatter
  verbatim and every file's ``sha256:`` digest and size;
- with ``directory_read=True`` (advertised as ``directoryRead``), ``resources/directory/read``
  on every directory of the skill namespace (``inode/directory`` children for subdirectories,
  ``-32602`` for anything that is not a directory).

The rules are checked when a skill is added (ValueError, nothing served): the name (1-64
lowercase letters, digits, hyphens; no leading, trailing or double hyphen) must equal the
skill's directory name, the frontmatter must be YAML with a ``name`` and a ``description``,
file paths must stay inside the skill (no ``..``, no absolute path, no symlink leading out),
and a skill may have at most 512 files and 16 MiB in all. Files are read once, when the skill
is added: what is served is exactly what was digested. Hidden files (``.name``) and
``__pycache__`` are left out of a directory skill unless ``include_hidden=True``.

A :class:`DynamicSkill` is generated when it is read (its entry's ``resources`` is
``"dynamic"``: no digests, no sizes): its frontmatter is declared, and each generated
``SKILL.md`` must carry exactly that frontmatter (else it is not served, ``-32603``)::

    skills.add(DynamicSkill({"name": "daily", "description": "Today's report"},
                            lambda: "---\nname: daily\ndescription: Today's report\n---\n" + report(),
                            files={"data/today.json": today_json}, prefix="reports"))

See :class:`DynamicSkill` for the rules (sizes, cache hints, bad content); :meth:`Skills.changed`
tells clients its content moved on.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Union, overload
from urllib.parse import quote

from msgspec import UNSET

from ..frontmatter import parse_frontmatter
from ..protocol import errors
from ..protocol import types as t
from ..protocol.skills import (
    CAPABILITY,
    DIRECTORY_MIME,
    EXTENSION_ID,
    MAX_RESOURCES,
    MAX_TOTAL_SIZE,
    SCHEME,
    SKILL_MD,
    SKILL_MD_MIME,
    GetSkillParams,
    GetSkillResult,
    ListSkillsParams,
    ListSkillsResult,
    ReadDirectoryParams,
    ReadDirectoryResult,
    Skill,
    SkillFormatError,
    SkillResource,
    check_name,
    check_prefix,
    digest,
    not_a_directory,
    unknown_skill,
)
from . import Extension
from ._skills_dynamic import DynamicFile, DynamicSkill

if TYPE_CHECKING:
    from ..server import Context, Server

__all__ = ["EXTENSION_ID", "DynamicSkill", "SkillDef", "SkillFile", "SkillFormatError", "Skills"]

_TEXT_TYPES = ("application/json", "application/yaml", "application/x-yaml", "application/xml",
               "application/javascript", "application/x-sh", "application/toml")
_PATH_SAFE = "!$&'()*+,;=:@-._~"


def _mime_type(path: str) -> str:
    import mimetypes

    if path.endswith(".md") or path.endswith(".markdown"):
        return SKILL_MD_MIME
    guessed, _ = mimetypes.guess_type(path, strict=False)
    return guessed or "application/octet-stream"


def file_uri(root: str, path: str) -> str:
    """The URI of the file at ``path`` (relative, '/'-separated) in the skill directory ``root``."""
    return root + "/" + "/".join(quote(seg, safe=_PATH_SAFE) for seg in path.split("/"))


def _check_path(path: str) -> str:
    """A file path relative to the skill root, '/'-separated, that cannot leave it."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"invalid skill file path {path!r}")
    if path.startswith("/") or "\\" in path or "\x00" in path or (len(path) > 1 and path[1] == ":"):
        raise ValueError(f"skill file path {path!r} must be relative, with '/' separators")
    for seg in path.split("/"):
        if seg in ("", ".", ".."):
            raise ValueError(f"skill file path {path!r} escapes the skill directory or has an empty segment")
    return path


@dataclasses.dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its path in the skill, its bytes, its MIME type."""

    path: str
    data: bytes
    mime_type: str

    @property
    def size(self) -> int:
        """The length of the content in bytes."""
        return len(self.data)

    @property
    def text(self) -> str | None:
        """The content as text when it is served as text (UTF-8, not a binary type)."""
        if self.mime_type.startswith(("image/", "audio/", "video/", "font/")) or \
                (self.mime_type.startswith("application/") and self.mime_type not in _TEXT_TYPES):
            return None
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


class SkillDef:
    """A skill ready to serve: checked, its files read, its entry computed.

    ``files`` maps paths relative to the skill root (``"SKILL.md"``, ``"references/FORMS.md"``)
    to contents (str is UTF-8). ``prefix`` is the organizational prefix of the skill path
    (``"acme/billing"``); the last segment is the frontmatter ``name``.
    """

    def __init__(self, files: Mapping[str, str | bytes], *, prefix: str = "") -> None:
        if not isinstance(files, Mapping):
            raise TypeError("a skill definition is a mapping of file paths to contents")
        self.prefix = "/".join(check_prefix(prefix))
        checked: dict[str, SkillFile] = {}
        for path, content in files.items():
            path = _check_path(path)
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            mime = SKILL_MD_MIME if path == SKILL_MD else _mime_type(path)
            checked[path] = SkillFile(path, data, mime)
        if SKILL_MD not in checked:
            raise SkillFormatError("a skill must contain a SKILL.md at its root")
        if len(checked) > MAX_RESOURCES:
            raise SkillFormatError(f"a skill may have at most {MAX_RESOURCES} files; this one has {len(checked)}")
        total = sum(len(f.data) for f in checked.values())
        if total > MAX_TOTAL_SIZE:
            raise SkillFormatError(f"a skill may hold at most {MAX_TOTAL_SIZE} bytes in all; this one holds {total}")
        try:
            text = checked[SKILL_MD].data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillFormatError("SKILL.md must be UTF-8 text") from None
        self.frontmatter: dict[str, Any] = parse_frontmatter(text)
        self.name: str = check_name(self.frontmatter["name"])
        skill_path = f"{self.prefix}/{self.name}" if self.prefix else self.name
        #: The skill directory's URI (no trailing slash) and its SKILL.md's URI.
        self.root = SCHEME + skill_path
        self.uri = f"{self.root}/{SKILL_MD}"
        # SKILL.md first, then the other files in path order.
        order = [SKILL_MD] + sorted(p for p in checked if p != SKILL_MD)
        self.files: dict[str, SkillFile] = {self.file_uri(p): checked[p] for p in order}
        self.entry = Skill(uri=self.uri, frontmatter=self.frontmatter, resources=[
            SkillResource(uri=u, digest=digest(f.data), size=len(f.data)) for u, f in self.files.items()])

    def file_uri(self, path: str) -> str:
        """The URI of this skill's file at ``path``."""
        return file_uri(self.root, path)

    @classmethod
    def from_directory(cls, directory: str | os.PathLike[str], *, prefix: str = "",
                       include_hidden: bool = False) -> SkillDef:
        """Read the skill in ``directory`` (its name must be the frontmatter ``name``).

        Symlinks are followed only to files inside the directory; a symlinked directory, or a
        link leading out, is refused.
        """
        root = Path(directory)
        if not (root / SKILL_MD).is_file():
            raise SkillFormatError(f"{str(root)!r} is not a skill directory (no {SKILL_MD})")
        real_root = root.resolve()
        files: dict[str, bytes] = {}
        total = 0
        for here, dirs, names in os.walk(root, followlinks=False):
            base = Path(here)
            for d in list(dirs):
                if not include_hidden and (d.startswith(".") or d == "__pycache__"):
                    dirs.remove(d)
                elif (base / d).is_symlink():
                    raise ValueError(f"{str(base / d)!r}: symlinked directories are not followed in a skill")
            for n in sorted(names):
                if not include_hidden and n.startswith("."):
                    continue
                full = base / n
                real = full.resolve()
                if not real.is_relative_to(real_root):
                    raise ValueError(f"{str(full)!r} escapes the skill directory")
                if not real.is_file():
                    continue
                rel = full.relative_to(root).as_posix()
                if len(files) >= MAX_RESOURCES:
                    raise SkillFormatError(f"a skill may have at most {MAX_RESOURCES} files: {str(root)!r} has more")
                total += real.stat().st_size
                if total > MAX_TOTAL_SIZE:
                    raise SkillFormatError(f"a skill may hold at most {MAX_TOTAL_SIZE} bytes in all: "
                                           f"{str(root)!r} holds more")
                files[rel] = real.read_bytes()
        skill = cls(files, prefix=prefix)
        if skill.name != real_root.name and skill.name != root.name:
            raise SkillFormatError(f"the skill name {skill.name!r} must equal its directory name {root.name!r}")
        return skill


#: A skill served: its files read when added (digests), or generated when read (``"dynamic"``).
AnySkill = Union[SkillDef, DynamicSkill]
SkillSource = Union[str, "os.PathLike[str]", SkillDef, DynamicSkill, Mapping[str, Union[str, bytes]]]


def _same_file(a: Any, b: Any) -> bool:
    """Two files known to have the same content (a generated file is never known to)."""
    return isinstance(a, SkillFile) and isinstance(b, SkillFile) and a.data == b.data


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"mcpkit:skills:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str | Any, length: int) -> int:
    if not isinstance(cursor, str):
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if raw.startswith("mcpkit:skills:"):
            n = int(raw[len("mcpkit:skills:"):])
            if 0 <= n <= length:
                return n
    except (ValueError, UnicodeDecodeError):
        pass
    raise errors.invalid_params("Invalid cursor", {"cursor": cursor})


class Skills(Extension[None]):
    """The skills extension: ``server.use(Skills(*skills, directory_read=..., ...))``.

    Each of ``skills`` is a skill directory (str or path), a :class:`SkillDef`, a mapping of
    file paths to contents, or a :class:`DynamicSkill` (generated when read); add more with
    :meth:`add`. ``directory_read`` serves (and
    advertises) ``resources/directory/read``. ``ttl_ms``/``cache_scope`` are the cache hints
    of ``skills/list``, ``skills/get`` and the skill files (default: the server's);
    ``page_size`` the ``skills/list`` page (default: the server's).
    """

    id: ClassVar[str] = EXTENSION_ID

    def __init__(self, *skills: SkillSource,
                 directory_read: bool = False, ttl_ms: int | None = None, cache_scope: t.CacheScope | None = None,
                 page_size: int | None = None) -> None:
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms < 0):
            raise ValueError("ttl_ms must be None (the server's) or an integer >= 0")
        if cache_scope not in (None, "public", "private"):
            raise ValueError("cache_scope must be None (the server's), 'public' or 'private'")
        if page_size is not None and (not isinstance(page_size, int) or page_size < 1):
            raise ValueError("page_size must be None (the server's) or at least 1")
        self.directory_read = directory_read
        self.ttl_ms = ttl_ms
        self.cache_scope: t.CacheScope | None = cache_scope
        self.page_size = page_size
        self._server: Server | None = None
        self._skills: dict[str, AnySkill] = {}
        self._files: dict[str, SkillFile | DynamicFile] = {}  # every served file URI (shared by nested skills)
        self._dirs: dict[str, dict[str, t.Resource]] = {}
        self._pending = [self._build(s) for s in skills]

    # ------------------------------------------------------------------ the skills served
    @property
    def skills(self) -> Mapping[str, AnySkill]:
        """The skills served, by the URI of their SKILL.md."""
        return dict(self._skills)

    @staticmethod
    def _build(skill: Any, prefix: str = "", include_hidden: bool = False) -> AnySkill:
        if isinstance(skill, (SkillDef, DynamicSkill)):
            return skill
        if isinstance(skill, (str, os.PathLike)):
            return SkillDef.from_directory(skill, prefix=prefix, include_hidden=include_hidden)
        if isinstance(skill, Mapping):
            return SkillDef(skill, prefix=prefix)
        raise TypeError(f"a skill is a directory, a SkillDef, a DynamicSkill or a mapping of files, "
                        f"not {type(skill).__name__}")

    @overload
    def add(self, skill: DynamicSkill, *, prefix: str = "", include_hidden: bool = False,
            replace: bool = False) -> DynamicSkill: ...

    @overload
    def add(self, skill: str | os.PathLike[str] | SkillDef | Mapping[str, str | bytes], *, prefix: str = "",
            include_hidden: bool = False, replace: bool = False) -> SkillDef: ...

    def add(self, skill: SkillSource, *, prefix: str = "", include_hidden: bool = False,
            replace: bool = False) -> AnySkill:
        """Serve one more skill (a directory, a :class:`SkillDef`, a mapping of files or a
        :class:`DynamicSkill`) and return it.

        At any time, also while serving: the new files are resources at once, and clients are
        told (one ``notifications/resources/list_changed``). ``replace=True`` swaps a skill
        already served at the same URI for this one (else ValueError); its files whose content
        changed, or that are gone, get ``notifications/resources/updated``.
        """
        sdef = self._build(skill, prefix, include_hidden)
        server = self._server
        if server is None:
            if any(p.uri == sdef.uri for p in self._pending):
                if not replace:
                    raise ValueError(f"a skill is already served at {sdef.uri}")
                self._pending = [p for p in self._pending if p.uri != sdef.uri]
            self._pending.append(sdef)
            return sdef
        old = self._skills.get(sdef.uri)
        if old is not None and not replace:
            raise ValueError(f"a skill is already served at {sdef.uri}")
        self._check(server, sdef, old)
        with server.batch_changes():
            if old is not None:
                self._drop(server, old)
            self._register(server, sdef)
            if old is not None:
                for uri, f in old.files.items():
                    if not _same_file(sdef.files.get(uri), f):
                        server.notify_resource_updated(uri)
        return sdef

    def changed(self, uri: str) -> None:
        """Tell clients that the content of the skill whose SKILL.md is at ``uri`` changed
        (KeyError if none is served): ``notifications/resources/updated`` for each of its files.
        For a :class:`DynamicSkill` whose generated content moved on; a skill read from files
        changes through :meth:`add` with ``replace=True``."""
        server = self._server
        if server is None:  # not served yet: nobody to tell
            if not any(p.uri == uri for p in self._pending):
                raise KeyError(uri)
            return
        sdef = self._skills[uri]
        with server.batch_changes():
            for file_uri in sdef.files:
                server.notify_resource_updated(file_uri)

    def remove(self, uri: str) -> None:
        """Stop serving the skill whose SKILL.md is at ``uri`` (KeyError if none); clients are
        told (``notifications/resources/list_changed``, and ``updated`` for each file)."""
        server = self._server
        if server is None:
            if not any(p.uri == uri for p in self._pending):
                raise KeyError(uri)
            self._pending = [p for p in self._pending if p.uri != uri]
            return
        sdef = self._skills[uri]
        with server.batch_changes():
            gone = self._drop(server, sdef)
            for file_uri in gone:
                server.notify_resource_updated(file_uri)

    def _drop(self, server: Server, sdef: AnySkill) -> list[str]:
        """Unregister ``sdef`` (its files no other skill serves); the file URIs removed."""
        del self._skills[sdef.uri]
        still = {u for s in self._skills.values() for u in s.files}
        gone = [u for u in sdef.files if u not in still]
        for file_uri in gone:
            self._files.pop(file_uri, None)
            server.remove_resource(file_uri)
        self._index()
        return gone

    def _check(self, server: Server, sdef: AnySkill, replacing: AnySkill | None = None) -> None:
        kept = [s for s in self._skills.values() if s is not replacing]
        for other in kept:  # a static entry lists its nested skills' files: none can be generated
            static, dynamic = (other, sdef) if isinstance(sdef, DynamicSkill) else (sdef, other)
            if isinstance(static, SkillDef) and isinstance(dynamic, DynamicSkill) and \
                    dynamic.root.startswith(static.root + "/"):
                raise ValueError(f"the dynamic skill {dynamic.uri} cannot be nested in the skill {static.uri} "
                                 "(its entry must list every file in it, with digests)")
        others = {u: f for s in kept for u, f in s.files.items()}
        for uri, f in sdef.files.items():
            mine = others.get(uri)
            if mine is not None and not _same_file(mine, f):
                raise ValueError(f"{uri} is already served by another skill with other content")
            if mine is None and uri not in self._files and (uri in server.resources or sdef.root in server.resources):
                raise ValueError(f"{uri} is already a resource of this server")

    def _serve(self, server: Server, sdef: AnySkill) -> None:
        if sdef.uri in self._skills:
            raise ValueError(f"a skill is already served at {sdef.uri}")
        self._check(server, sdef)
        with server.batch_changes():
            self._register(server, sdef)

    def _register(self, server: Server, sdef: AnySkill) -> None:
        for uri, f in sdef.files.items():
            if uri in self._files:
                continue
            self._files[uri] = f
            is_md = f.path == SKILL_MD
            if isinstance(sdef, DynamicSkill):  # generated at each read: no size, its own cache hints
                server.resource(uri, name=sdef.name if is_md else f.path,
                                description=sdef.frontmatter["description"] if is_md else None,
                                mime_type=f.mime_type, ttl_ms=sdef.ttl_ms,
                                cache_scope=sdef.cache_scope)(sdef.reader(server, uri))
                continue
            assert isinstance(f, SkillFile)
            content: str | bytes = f.text if f.text is not None else f.data
            server.resource(uri, name=sdef.name if is_md else f.path,
                            description=sdef.frontmatter["description"] if is_md else None,
                            mime_type=f.mime_type, size=len(f.data), ttl_ms=self.ttl_ms,
                            cache_scope=self.cache_scope)(_constant(content))
        self._skills[sdef.uri] = sdef
        self._index()

    def _index(self) -> None:
        """Every directory of the namespace and its direct children (for directory reads)."""
        dirs: dict[str, dict[str, t.Resource]] = {}
        for uri, f in self._files.items():
            path = uri[len(SCHEME):].split("/")
            for depth in range(1, len(path)):
                parent = SCHEME + "/".join(path[:depth])
                child = SCHEME + "/".join(path[:depth + 1])
                kids = dirs.setdefault(parent, {})
                if depth == len(path) - 1:
                    kids[child] = t.Resource(uri=child, name=path[-1], mimeType=f.mime_type,
                                             size=f.size if f.size is not None else UNSET)
                else:
                    kids.setdefault(child, t.Resource(uri=child, name=path[depth], mimeType=DIRECTORY_MIME))
        self._dirs = dirs

    # ------------------------------------------------------------------ the Extension hooks
    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True} if self.directory_read else {}

    def install(self, server: Server) -> None:
        self._server = server
        server.add_method("skills/list", self.list_skills, ListSkillsParams, CAPABILITY)
        server.add_method("skills/get", self.get_skill, GetSkillParams, CAPABILITY)
        if self.directory_read:
            server.add_method("resources/directory/read", self.read_directory, ReadDirectoryParams, CAPABILITY)
        pending, self._pending = self._pending, []
        for sdef in pending:
            self._serve(server, sdef)

    # ------------------------------------------------------------------ the methods
    def _hints(self) -> tuple[int, t.CacheScope]:
        server = self._server
        assert server is not None
        ttl = self.ttl_ms if self.ttl_ms is not None else server.ttl_ms
        return ttl, self.cache_scope or server.cache_scope

    def _page_size(self) -> int | None:
        return self.page_size if self.page_size is not None else (self._server.page_size if self._server else None)

    async def list_skills(self, ctx: Context, params: ListSkillsParams) -> ListSkillsResult:
        entries = [s.entry for s in self._skills.values()]
        start = _decode_cursor(params.cursor, len(entries))
        size = self._page_size()
        end = len(entries) if size is None else start + size
        ttl, scope = self._hints()
        result = ListSkillsResult(skills=entries[start:end], ttlMs=ttl, cacheScope=scope)
        if end < len(entries):
            result.nextCursor = _encode_cursor(end)
        return result

    async def get_skill(self, ctx: Context, params: GetSkillParams) -> GetSkillResult:
        sdef = self._skills.get(params.uri)
        if sdef is None:
            raise unknown_skill(params.uri)
        ttl, scope = self._hints()
        return GetSkillResult(skill=sdef.entry, ttlMs=ttl, cacheScope=scope)

    async def read_directory(self, ctx: Context, params: ReadDirectoryParams) -> ReadDirectoryResult:
        kids = self._dirs.get(params.uri)
        if kids is None:
            raise not_a_directory(params.uri)
        children = [kids[k] for k in sorted(kids)]
        start = _decode_cursor(params.cursor, len(children))
        size = self._page_size()
        end = len(children) if size is None else start + size
        result = ReadDirectoryResult(resources=children[start:end])
        if end < len(children):
            result.nextCursor = _encode_cursor(end)
        return result


def _constant(content: str | bytes) -> Any:
    def read() -> str | bytes:
        return content

    return read
