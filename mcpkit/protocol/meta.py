"""The ``_meta`` rules: reserved keys and key syntax."""

from __future__ import annotations

from . import lazy_re

PREFIX = "io.modelcontextprotocol/"
PROTOCOL_VERSION = PREFIX + "protocolVersion"
CLIENT_CAPABILITIES = PREFIX + "clientCapabilities"
CLIENT_INFO = PREFIX + "clientInfo"
LOG_LEVEL = PREFIX + "logLevel"
SERVER_INFO = PREFIX + "serverInfo"
SUBSCRIPTION_ID = PREFIX + "subscriptionId"
PROGRESS_TOKEN = "progressToken"
TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})

#: Keys a request's ``_meta`` must carry.
REQUIRED_REQUEST_KEYS = (PROTOCOL_VERSION, CLIENT_CAPABILITIES)

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOG_LEVEL_RANK = {name: i for i, name in enumerate(LOG_LEVELS)}

_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAME = r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?"
_KEY_RE = lazy_re(globals(), "_KEY_RE", rf"(?:{_LABEL}(?:\.{_LABEL})*/)?{_NAME}")
_PREFIXED_KEY_RE = lazy_re(globals(), "_PREFIXED_KEY_RE", rf"{_LABEL}(?:\.{_LABEL})*/{_NAME}")


def is_valid_key(key: str) -> bool:
    """True when ``key`` follows the ``_meta`` key syntax (optional prefix, then name)."""
    return _KEY_RE.fullmatch(key) is not None


def is_valid_extension_id(key: str) -> bool:
    """Extension identifiers follow the key syntax with a mandatory prefix."""
    return _PREFIXED_KEY_RE.fullmatch(key) is not None


def is_reserved(key: str) -> bool:
    """True when the key's prefix is reserved for MCP (second label ``modelcontextprotocol`` or ``mcp``)."""
    slash = key.find("/")
    if slash < 0:
        return False
    labels = key[:slash].split(".")
    return len(labels) >= 2 and labels[1] in ("modelcontextprotocol", "mcp")


def invalid_keys(meta: dict[str, object]) -> list[str]:
    """The keys of ``meta`` that break the key syntax."""
    return [k for k in meta if not (isinstance(k, str) and _KEY_RE.fullmatch(k))]
