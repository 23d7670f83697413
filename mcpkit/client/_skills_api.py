"""The skills methods of the Client (a base class of :class:`~mcpkit.client.Client`).

Thin on purpose: the work, and what it imports (the skills protocol, the frontmatter parser,
hashing), lives in :mod:`._skills` and is loaded on the first skills call, not with the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..protocol import skills as S
    from ._skills import LoadedSkill


class SkillsApi:
    """``list_skills`` and ``get_skill`` (a base class of :class:`~mcpkit.client.Client`)."""

    async def skills_settings(self) -> dict[str, Any] | None:
        """What the server declares for the skills extension (its settings), or None."""
        from ._skills import skills_settings

        return await skills_settings(self)

    async def list_skills(self) -> list[S.Skill]:
        """Every entry of ``skills/list`` (all pages); they are held for :meth:`get_skill`.

        Reads no skill file. Malformed entries raise ProtocolError.
        """
        from ._skills import list_skills

        return await list_skills(self)

    async def get_skill_entry(self, uri: str) -> S.Skill:
        """The current entry of one skill (``skills/get``); it replaces the one held."""
        from ._skills import get_skill_entry

        return await get_skill_entry(self, uri)

    async def get_skill(self, uri: str, *, refresh: bool = False, allow_dynamic: bool = False) -> LoadedSkill:
        """Load the skill whose SKILL.md is at ``uri``: read it and verify it against its entry
        (held from :meth:`list_skills`, else, or with ``refresh``, from ``skills/get``).

        Raises :class:`~mcpkit.errors.SkillVerificationError` (and uses nothing) when the entry
        breaks the rules or the content is not what it describes.
        """
        from ._skills import get_skill

        return await get_skill(self, uri, refresh, allow_dynamic)
