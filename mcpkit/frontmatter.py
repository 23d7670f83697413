"""A SKILL.md's YAML frontmatter, parsed (PyYAML, loaded on first use: ``pip install 'mcpkit[skills]'``).

Beside the pure rules of :mod:`mcpkit.protocol.skills`, which imports no third-party parser;
used by the skills extension (server) and the client alike.
"""

from __future__ import annotations

import re
from typing import Any

from .protocol.skills import SkillFormatError, check_frontmatter, frontmatter_block


def _yaml() -> Any:
    import importlib

    try:
        return importlib.import_module("yaml")  # optional: pip install 'mcpkit[skills]'
    except ImportError:
        raise SkillFormatError("reading a SKILL.md frontmatter needs PyYAML: pip install 'mcpkit[skills]'") from None


def _yaml_loader() -> Any:
    yaml = _yaml()
    Loader: Any = type("Loader", (yaml.SafeLoader,), {})

    dropped = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"}
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in dropped]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))

    def mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=True)
            if key in seen:
                raise SkillFormatError(f"duplicate frontmatter key {key!r}")
            seen.add(key)
        out: dict[Any, Any] = loader.construct_mapping(node, deep=True)
        return out

    Loader.add_constructor("tag:yaml.org,2002:map", mapping)
    return Loader


_LOADER: Any = None


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter at the top of a SKILL.md, as a JSON object.

    SkillFormatError when there is none, it is not YAML, not a mapping, not JSON, or lacks a
    non-empty string ``name`` and ``description``. The name is not checked here (a host
    compares it with the URI; ``check_name`` checks the rules).
    """
    global _LOADER
    block = frontmatter_block(text)
    if _LOADER is None:
        _LOADER = _yaml_loader()
    yaml = _yaml()
    try:
        data = yaml.load(block, Loader=_LOADER)  # a SafeLoader subclass: YAML 1.2 plain scalars, no duplicate keys
    except yaml.YAMLError as exc:
        raise SkillFormatError(f"SKILL.md frontmatter is not valid YAML: {exc}") from None
    return check_frontmatter(data)
