"""The skills extension on the wire: ``io.modelcontextprotocol/skills`` (SEP-2640).

Its identifiers, params and results, and the rules both sides apply: skill names, skill URIs,
``SKILL.md`` frontmatter, digests, the per-skill limits. Sans-IO: no file, socket or loop here.

The frontmatter is YAML; parsing it needs PyYAML (``pip install 'mcpkit[skills]'``), imported
only when a frontmatter is parsed. It is read with the YAML 1.2 core schema's plain scalars
(``yes``/``on`` stay strings, dates stay strings), duplicate keys are refused, and the result
must be JSON (the entry's ``frontmatter`` is that object, verbatim).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType

from . import errors
from . import meta as M
from . import types as t

EXTENSION_ID = M.PREFIX + "skills"
#: The server capability name that gates the ``skills/*`` methods.
CAPABILITY = f"extensions/{EXTENSION_ID}"
SKILL_MD = "SKILL.md"
SCHEME = "skill://"
DIRECTORY_MIME = "inode/directory"
SKILL_MD_MIME = "text/markdown"
#: Per-skill limits: entries of ``resources`` (SKILL.md included), and the sum of their sizes.
MAX_RESOURCES = 512
MAX_TOTAL_SIZE = 16 * 1024 * 1024
#: ``_meta`` keys on skill resources, and reserved frontmatter ``metadata`` keys.
META_PREFIX = "io.modelcontextprotocol.skills/"
RESERVED_METADATA_PREFIX = "io.modelcontextprotocol/"
MAX_DESCRIPTION = 1024

#: The Agent Skills naming rules: 1-64 characters, lowercase letters, digits and hyphens,
#: no leading, trailing or consecutive hyphen.
NAME_RE = re.compile(r"^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
#: A prefix segment (the first is the URI authority): URI unreserved characters only.
SEGMENT_RE = re.compile(r"^[A-Za-z0-9._~-]+$")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_FRONTMATTER_RE = re.compile(r"^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)")


class SkillResource(Struct, kw_only=True):
    """One file of a skill: its URI, the SHA-256 of its raw bytes, their length."""

    uri: str
    digest: str
    size: int


class Skill(Struct, kw_only=True):
    """A skill entry (``skills/list`` and ``skills/get``): the URI of its SKILL.md, its
    frontmatter verbatim, and every file (or ``"dynamic"``)."""

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource] | Literal["dynamic"]


class ListSkillsParams(t.PaginatedParams, kw_only=True):
    """``skills/list`` params."""


class GetSkillParams(t.RequestParams, kw_only=True):
    """``skills/get`` params: the URI of a skill's SKILL.md."""

    uri: str


class ReadDirectoryParams(t.RequestParams, kw_only=True):
    """``resources/directory/read`` params."""

    uri: str
    cursor: str | UnsetType = UNSET


class ListSkillsResult(t.CacheableResult, kw_only=True):
    skills: list[Skill]
    nextCursor: str | UnsetType = UNSET


class GetSkillResult(t.CacheableResult, kw_only=True):
    skill: Skill


class ReadDirectoryResult(t.Result, kw_only=True):
    resources: list[t.Resource]
    nextCursor: str | UnsetType = UNSET


# ---------------------------------------------------------------- rules
class SkillFormatError(ValueError):
    """A skill that breaks the format rules (name, URI, frontmatter, limits)."""


def digest(data: bytes) -> str:
    """``sha256:{64 lowercase hex}`` of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_name(name: Any) -> str:
    """``name`` if it satisfies the Agent Skills naming rules, else SkillFormatError."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise SkillFormatError(
            f"invalid skill name {name!r}: 1-64 lowercase letters, digits and hyphens, "
            "no leading, trailing or consecutive hyphen")
    return name


def check_prefix(prefix: str) -> tuple[str, ...]:
    """The segments of a skill-path prefix (``acme/billing``), each URI-safe."""
    if not prefix:
        return ()
    segments = tuple(prefix.split("/"))
    for seg in segments:
        if seg in (".", "..") or not SEGMENT_RE.match(seg):
            raise SkillFormatError(f"invalid skill prefix {prefix!r}: segment {seg!r} is not a plain URI segment "
                                   "(letters, digits, '.', '_', '~', '-')")
    return segments


def skill_name_of(uri: str) -> str | None:
    """The skill name a ``.../<name>/SKILL.md`` URI carries (its last directory), or None."""
    _, sep, rest = uri.partition("://")
    if not sep:
        return None
    parts = [p for p in rest.split("/") if p]
    if len(parts) < 2 or parts[-1] != SKILL_MD:
        return None
    return parts[-2]


def skill_root(uri: str) -> str:
    """The skill directory URI of a SKILL.md URI (no trailing slash)."""
    return uri[: -len("/" + SKILL_MD)] if uri.endswith("/" + SKILL_MD) else uri




def _check_json(value: Any, where: str) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SkillFormatError(f"frontmatter {where}: {value!r} is not a JSON number")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise SkillFormatError(f"frontmatter {where}: key {k!r} is not a string")
            _check_json(v, f"{where}.{k}" if where else k)
        return
    raise SkillFormatError(f"frontmatter {where}: a {type(value).__name__} is not JSON")


def frontmatter_block(text: str) -> str:
    """The YAML text of a SKILL.md's frontmatter; SkillFormatError when there is none.
    (Parsing the YAML needs PyYAML, which this pure core does not import: see
    ``mcpkit.frontmatter.parse_frontmatter``.)"""
    body = text[1:] if text.startswith("\ufeff") else text
    m = _FRONTMATTER_RE.match(body)
    if m is None:
        raise SkillFormatError("SKILL.md must begin with a YAML frontmatter block between '---' lines")
    return m.group(1)


def check_frontmatter(data: Any) -> dict[str, Any]:
    """The parsed frontmatter, checked: a JSON object with a non-empty string ``name`` and
    ``description`` (the name's rules are :func:`check_name`'s); SkillFormatError otherwise."""
    if not isinstance(data, dict):
        raise SkillFormatError("SKILL.md frontmatter must be a YAML mapping")
    _check_json(data, "")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise SkillFormatError(f"SKILL.md frontmatter needs a non-empty string {key!r}")
    return data


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 == 1.0, dicts by key, lists in order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def frontmatter_differences(found: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """The fields in which a SKILL.md's frontmatter differs from an entry's (sorted; [] if none)."""
    if same_json(found, expected):
        return []
    return sorted(k for k in found.keys() | expected.keys() if not same_json(found.get(k), expected.get(k)))


def unknown_skill(uri: str) -> errors.MCPError:
    return errors.invalid_params(f"No skill is served at {uri}", {"uri": uri})


def not_a_directory(uri: str) -> errors.MCPError:
    return errors.invalid_params(f"{uri} is not a directory resource", {"uri": uri})
