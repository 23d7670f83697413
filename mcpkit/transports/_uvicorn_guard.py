"""Whether the installed uvicorn is one whose private protocol classes mcpkit may subclass.

The HTTP limits (:mod:`._limits`: ``HttpToolsProtocol``) and the lingering close
(:mod:`._linger`: ``H11Protocol``) subclass uvicorn classes that are not public API and
change between releases. They were written and tested for uvicorn 0.x from 0.30 (the floor
of the ``http`` extra's pin; tested up to 0.54). Under any other version mcpkit logs one
warning line and serves with uvicorn's own h11 protocol and the coarser limits that uvicorn
enforces itself (``h11_max_incomplete_event_size``, ``limit_concurrency``), rather than
breaking on a changed private API.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger("mcpkit.http")

#: The uvicorn major version the subclasses were written for.
SUPPORTED_MAJOR = 0
#: The oldest minor release of that major they were tested with (the pin's floor).
MIN_MINOR = 30

_VERSION = re.compile(r"\s*(\d+)\.(\d+)")
_warned = False


def supported(version: str) -> bool:
    """Whether uvicorn ``version`` (``"0.54.0"``...) is in the range the subclasses were
    written and tested for; an unparseable version is not."""
    m = _VERSION.match(version)
    if m is None:
        return False
    return int(m[1]) == SUPPORTED_MAJOR and int(m[2]) >= MIN_MINOR


def installed_version() -> str:
    """The installed uvicorn's version string ("" when it does not say)."""
    import uvicorn

    version = getattr(uvicorn, "__version__", "")
    return version if isinstance(version, str) else ""


def may_subclass() -> bool:
    """Whether the installed uvicorn may be subclassed; logs one warning line (once per
    process) when it may not."""
    global _warned
    version = installed_version()
    if supported(version):
        return True
    if not _warned:
        _warned = True
        log.warning("uvicorn %s is outside the versions mcpkit's HTTP limits were tested with (%d.%d and later %d.x): "
                    "serving with uvicorn's own h11 protocol and its coarser limits (400 and a plain-text 503, "
                    "no request deadline)", version or "(unknown version)", SUPPORTED_MAJOR, MIN_MINOR,
                    SUPPORTED_MAJOR)
    return False
