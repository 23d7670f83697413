"""The OpenTelemetry semantic conventions for MCP, as plain data (no OpenTelemetry import).

Names, units and bucket boundaries follow ``docs/gen-ai/mcp.md`` of the semantic
conventions for generative AI (status: development): spans named ``{mcp.method.name}
{target}``, kinds SERVER and CLIENT, and four duration histograms in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The instrumentation scope (tracer and meter name).
SCOPE = "mcpkit"

METHOD = "mcp.method.name"
ERROR_TYPE = "error.type"
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
OPERATION_NAME = "gen_ai.operation.name"
REQUEST_ID = "jsonrpc.request.id"
RESOURCE_URI = "mcp.resource.uri"
STATUS_CODE = "rpc.response.status_code"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"
NETWORK_TRANSPORT = "network.transport"
NETWORK_PROTOCOL_NAME = "network.protocol.name"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"

SERVER_OPERATION_DURATION = "mcp.server.operation.duration"
CLIENT_OPERATION_DURATION = "mcp.client.operation.duration"
SERVER_SESSION_DURATION = "mcp.server.session.duration"
CLIENT_SESSION_DURATION = "mcp.client.session.duration"

#: ``ExplicitBucketBoundaries`` advised for all four histograms (unit ``s``).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

#: The W3C keys carried unprefixed in ``params._meta`` (SEP-414).
PROPAGATION_KEYS = ("traceparent", "tracestate", "baggage")

#: The error.type of a tools/call answered with ``isError: true``.
TOOL_ERROR = "tool_error"

#: Attributes that go on the duration metrics too (low cardinality); the others are span-only.
METRIC_KEYS = frozenset({METHOD, ERROR_TYPE, TOOL_NAME, PROMPT_NAME, OPERATION_NAME, STATUS_CODE, PROTOCOL_VERSION,
                         NETWORK_TRANSPORT, NETWORK_PROTOCOL_NAME, SERVER_ADDRESS, SERVER_PORT})

#: ``network.transport`` per mcpkit transport kind (the conventions: ``pipe`` for stdio,
#: ``tcp`` for Streamable HTTP). An in-process server has no network transport.
TRANSPORTS = {"stdio": "pipe", "http": "tcp"}


def target_attributes(method: str, name: Any, uri: Any) -> tuple[str, dict[str, Any]]:
    """The span name and the target attributes of one request.

    ``name`` is the tool or prompt name of a ``tools/call`` or ``prompts/get``; ``uri`` the
    resource of a ``resources/*`` request (an attribute, never in the span name: high cardinality).
    """
    attrs: dict[str, Any] = {METHOD: method}
    span_name = method
    if method == "tools/call" and isinstance(name, str):
        attrs[TOOL_NAME] = name
        attrs[OPERATION_NAME] = "execute_tool"
        span_name = f"{method} {name}"
    elif method == "prompts/get" and isinstance(name, str):
        attrs[PROMPT_NAME] = name
        span_name = f"{method} {name}"
    if isinstance(uri, str) and method in ("resources/read", "resources/subscribe", "resources/unsubscribe",
                                           "notifications/resources/updated"):
        attrs[RESOURCE_URI] = uri
    return span_name, attrs


#: The legacy session's own methods, answered by the session rather than by a handler.
SESSION_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})

#: The requests that follow up a task (their spans join the trace of the call that created it).
TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/cancel"})


def is_error_code(code: Any, *, server: bool) -> bool:
    """Whether a JSON-RPC error code classifies as an error. On the client every code does;
    on the server only ``-32603`` and the ``-32000``..``-32099`` server errors do: the others
    (parse error, invalid request or params, method not found, and ``-32002`` resource not
    found) say the caller sent something the server could not serve."""
    if not server:
        return True
    return isinstance(code, int) and (code == -32603 or (-32099 <= code <= -32000 and code != -32002))


def request_id(rid: Any) -> str | None:
    """``jsonrpc.request.id``: the id as a string; none for a notification or a null id."""
    if rid is None or isinstance(rid, bool):
        return None
    return str(rid)


#: The attributes of the two session-duration metrics.
SESSION_KEYS = frozenset({ERROR_TYPE, PROTOCOL_VERSION, NETWORK_TRANSPORT, NETWORK_PROTOCOL_NAME, SERVER_ADDRESS,
                          SERVER_PORT})


def session_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if k in SESSION_KEYS}


def metric_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if k in METRIC_KEYS}


def to_json(value: Any) -> str:
    """``value`` as a JSON string (for the opt-in content attributes)."""
    import msgspec

    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return msgspec.json.encode(repr(value)).decode()
