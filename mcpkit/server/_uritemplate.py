"""RFC 6570 URI templates, as far as resource templates need them: ``{var}`` and ``{+var}``."""

from __future__ import annotations

import re

from ..protocol import lazy_re

_EXPR = lazy_re(globals(), "_EXPR", r"\{([+#]?)([A-Za-z0-9_.,%]+)\}")


class UriTemplate:
    __slots__ = ("template", "variables", "_re")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        pattern, pos = [], 0
        for m in _EXPR.finditer(template):
            pattern.append(re.escape(template[pos:m.start()]))
            op, names = m.group(1), m.group(2).split(",")
            for i, name in enumerate(names):
                if name in self.variables:
                    raise ValueError(f"URI template {template!r} repeats variable {name!r}")
                self.variables.append(name)
                if i:
                    pattern.append(",")
                # Simple expansion never spans a "/" (one path segment); reserved expansion may.
                pattern.append(f"(?P<{name}>.+?)" if op else f"(?P<{name}>[^/?#,]+)")
            pos = m.end()
        pattern.append(re.escape(template[pos:]))
        self._re = re.compile("".join(pattern))

    @staticmethod
    def is_template(uri: str) -> bool:
        return _EXPR.search(uri) is not None

    def match(self, uri: str) -> dict[str, str] | None:
        m = self._re.fullmatch(uri)
        if m is None:
            return None
        from urllib.parse import unquote

        return {k: unquote(v) for k, v in m.groupdict().items()}
