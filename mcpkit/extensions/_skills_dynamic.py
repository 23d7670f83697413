"""Dynamic skills: a skill whose content is generated when it is read (SEP-2640 ``"dynamic"``).

The specification: when a skill's content is generated such that stable digests cannot be
published, its entry's ``resources`` is the string ``"dynamic"`` (in ``skills/list`` and
``skills/get`` alike) instead of the array of digests and sizes. The entry's ``frontmatter``
still must be identical to the frontmatter of the ``SKILL.md`` it describes (a host compares
them field by field), so the frontmatter is declared up front and every generated ``SKILL.md``
is checked against it before it is served. A host loading such a skill applies the 16 MiB
limit to what it retrieves; the server refuses to serve a generated file over that limit.

Reads are generated each time, so the skill's files carry no ``size`` in ``resources/list``
or a directory read, and their ``resources/read`` results say ``ttlMs: 0`` and
``cacheScope: "private"`` (the content may change with every read and with the caller)
unless the skill says otherwise.
"""

from __future__ import annotations

import base64
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

from ..frontmatter import parse_frontmatter
from ..protocol import errors
from ..protocol import types as t
from ..protocol.skills import (
    MAX_RESOURCES,
    MAX_TOTAL_SIZE,
    SCHEME,
    SKILL_MD,
    SKILL_MD_MIME,
    Skill,
    SkillFormatError,
    check_frontmatter,
    check_name,
    check_prefix,
    frontmatter_differences,
)

if TYPE_CHECKING:
    from ..server import Context, Server

__all__ = ["Content", "DynamicFile", "DynamicSkill"]

log = logging.getLogger("mcpkit.skills")

#: What generates a file: a function of no argument or of the request's Context, sync or
#: async, returning the file's text (str) or bytes.
Content = Union[Callable[[], Any], Callable[["Context"], Any]]


@dataclasses.dataclass(frozen=True)
class DynamicFile:
    """One file of a dynamic skill: its path in the skill, its MIME type, what makes it
    (a function, or a constant str/bytes). ``size`` is None: it is known only once read."""

    path: str
    mime_type: str
    source: Content | str | bytes
    size: None = None


def _takes_context(fn: Callable[..., Any]) -> bool:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    if len(params) > 1:
        raise TypeError(f"a skill content function takes no argument or one (the Context), not {len(params)}")
    return len(params) == 1


class DynamicSkill:
    """A skill whose ``SKILL.md`` (and files) are generated at read time: ``Skills.add(DynamicSkill(...))``.

    ``frontmatter`` is the skill's frontmatter (``name`` and ``description`` at least), the
    entry's verbatim; ``skill_md`` generates the whole ``SKILL.md`` text, whose frontmatter
    must equal it (checked on every read: a generated SKILL.md that differs is not served).
    ``files`` maps other paths to functions (or constant str/bytes). A function takes no
    argument or the request's :class:`~mcpkit.server.Context`, may be async, and returns str
    (UTF-8) or bytes. ``ttl_ms``/``cache_scope`` are its files' cache hints (default ``0`` and
    ``"private"``; None: the server's).
    """

    def __init__(self, frontmatter: Mapping[str, Any], skill_md: Content, *,
                 files: Mapping[str, Content | str | bytes] | None = None, prefix: str = "",
                 ttl_ms: int | None = 0, cache_scope: t.CacheScope | None = "private") -> None:
        from .skills import _check_path, _mime_type, file_uri

        if not isinstance(frontmatter, Mapping):
            raise TypeError("a dynamic skill's frontmatter is a mapping (name, description, ...)")
        if not callable(skill_md):
            raise TypeError("skill_md is the function that generates the SKILL.md text")
        if ttl_ms is not None and (isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0):
            raise ValueError("ttl_ms must be None (the server's) or an integer >= 0")
        if cache_scope not in (None, "public", "private"):
            raise ValueError("cache_scope must be None (the server's), 'public' or 'private'")
        self.frontmatter: dict[str, Any] = check_frontmatter(dict(frontmatter))
        self.name: str = check_name(self.frontmatter["name"])
        self.prefix = "/".join(check_prefix(prefix))
        self.ttl_ms = ttl_ms
        self.cache_scope: t.CacheScope | None = cache_scope
        skill_path = f"{self.prefix}/{self.name}" if self.prefix else self.name
        self.root = SCHEME + skill_path
        self.uri = f"{self.root}/{SKILL_MD}"
        checked: dict[str, DynamicFile] = {SKILL_MD: DynamicFile(SKILL_MD, SKILL_MD_MIME, skill_md)}
        for path, source in (files or {}).items():
            path = _check_path(path)
            if path == SKILL_MD:
                raise ValueError("a dynamic skill's SKILL.md is skill_md=, not one of files=")
            if not (callable(source) or isinstance(source, (str, bytes))):
                raise TypeError(f"{path}: a file of a dynamic skill is a function, a str or bytes, "
                                f"not {type(source).__name__}")
            checked[path] = DynamicFile(path, _mime_type(path), source)
        if len(checked) > MAX_RESOURCES:
            raise SkillFormatError(f"a skill may have at most {MAX_RESOURCES} files; this one has {len(checked)}")
        for f in checked.values():
            if callable(f.source):
                _takes_context(f.source)  # a function of two arguments is refused now, not at read time
        order = [SKILL_MD] + sorted(p for p in checked if p != SKILL_MD)
        self.files: dict[str, DynamicFile] = {file_uri(self.root, p): checked[p] for p in order}
        #: The entry: the frontmatter, and ``resources: "dynamic"``.
        self.entry = Skill(uri=self.uri, frontmatter=self.frontmatter, resources="dynamic")

    def reader(self, server: Server, uri: str) -> Callable[[Context], Awaitable[t.ResourceContents]]:
        """The ``resources/read`` handler of the file at ``uri``: generate, check, serve."""
        from ..server import Context
        from .skills import SkillFile

        f = self.files[uri]
        with_ctx = callable(f.source) and _takes_context(f.source)

        async def read(ctx: Context) -> t.ResourceContents:
            source = f.source
            if callable(source):
                try:
                    value = source(ctx) if with_ctx else source()  # type: ignore[call-arg]
                    if inspect.isawaitable(value):
                        value = await value
                except errors.MCPError:
                    raise
                except Exception as exc:
                    log.exception("generating %s failed", uri)
                    detail = f": {exc}" if server.expose_errors else ""
                    raise errors.internal_error(f"generating {uri} failed{detail}") from None
            else:
                value = source
            data = _data_of(uri, value, f.path == SKILL_MD)
            if f.path == SKILL_MD:
                self._check_frontmatter(data)
            served = SkillFile(f.path, data, f.mime_type)
            text = served.text
            if text is not None:
                return t.ResourceContents(uri=uri, mimeType=f.mime_type, text=text)
            return t.ResourceContents(uri=uri, mimeType=f.mime_type, blob=base64.b64encode(data).decode("ascii"))

        read.__annotations__["ctx"] = Context  # resolved here: the server passes the Context by its type
        return read

    def _check_frontmatter(self, data: bytes) -> None:
        try:
            found = parse_frontmatter(data.decode("utf-8"))
        except SkillFormatError as exc:
            log.error("%s: the generated SKILL.md is not served: %s", self.uri, exc)
            raise errors.internal_error(f"{self.uri}: the generated SKILL.md is not a skill: {exc}") from None
        fields = frontmatter_differences(found, self.frontmatter)
        if fields:
            log.error("%s: the generated SKILL.md's frontmatter differs from the entry's (%s)", self.uri, fields)
            raise errors.internal_error(f"{self.uri}: the generated SKILL.md's frontmatter differs from the "
                                        f"skill's entry ({', '.join(fields)}): not served")


def _data_of(uri: str, value: Any, utf8: bool) -> bytes:
    if isinstance(value, str):
        data = value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if utf8:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                raise errors.internal_error(f"{uri}: the generated SKILL.md is not UTF-8 text") from None
    else:
        raise errors.internal_error(f"{uri}: the content function returned {type(value).__name__}, "
                                    "not str or bytes")
    if len(data) > MAX_TOTAL_SIZE:
        raise errors.internal_error(f"{uri}: the content function made {len(data)} bytes, over the "
                                    f"{MAX_TOTAL_SIZE}-byte limit of a skill: not served")
    return data

