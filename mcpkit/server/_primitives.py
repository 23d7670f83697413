"""Registered tools, resources, resource templates and prompts, and how their return values
become wire results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec
from msgspec import UNSET

from ..errors import ToolError as ToolError  # its home is mcpkit.errors; still importable from here
from ..protocol import errors
from ..protocol import types as t
from ._pydantic import to_builtins_hook
from ._signature import Output, Signature

_json = msgspec.json.Encoder()
_CONTENT = (t.TextContent, t.ImageContent, t.AudioContent, t.ResourceLink, t.EmbeddedResource)


#: Who may cache a result: any cache, or only the requesting user's.
CacheScope = Literal["public", "private"]


def _opt(v: Any) -> Any:
    return UNSET if v is None else v


def _to_builtins(value: Any) -> Any:
    return msgspec.to_builtins(value, enc_hook=to_builtins_hook)


def _json_text(value: Any) -> str:
    return _json.encode(value).decode()


# ------------------------------------------------------------------ content
def to_content(value: Any) -> list[Any]:
    """Turn a handler's return value into a list of content blocks."""
    if value is None:
        return []
    if isinstance(value, str):
        return [t.TextContent(text=value)]
    if isinstance(value, _CONTENT):
        return [value]
    if isinstance(value, (list, tuple)):
        out: list[Any] = []
        for item in value:
            if isinstance(item, str):
                out.append(t.TextContent(text=item))
            elif isinstance(item, _CONTENT):
                out.append(item)
            elif isinstance(item, dict) and "type" in item:
                out.append(msgspec.convert(item, t.ContentBlock))
            else:
                out.append(t.TextContent(text=_json_text(_to_builtins(item))))
        return out
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        try:
            return [msgspec.convert(value, t.ContentBlock)]
        except msgspec.ValidationError:
            pass
    return [t.TextContent(text=_json_text(_to_builtins(value)))]


def text(value: str, **kw: Any) -> t.TextContent:
    """A text content block (``TextContent``); keywords are its other fields (``annotations``, ``meta``)."""
    return t.TextContent(text=value, **kw)


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def image(data: bytes, mime_type: str = "image/png") -> t.ImageContent:
    """An image content block of ``data`` (base64-encoded for the wire)."""
    return t.ImageContent(data=_b64(data), mimeType=mime_type)


def audio(data: bytes, mime_type: str = "audio/wav") -> t.AudioContent:
    """An audio content block of ``data`` (base64-encoded for the wire)."""
    return t.AudioContent(data=_b64(data), mimeType=mime_type)


def embedded(uri: str, value: str | bytes, mime_type: str | None = None) -> t.EmbeddedResource:
    """A content block embedding the resource ``uri`` with ``value`` (text, or bytes as a blob)."""
    return t.EmbeddedResource(resource=resource_contents(uri, value, mime_type))


def resource_contents(uri: str, value: Any, mime_type: str | None = None) -> t.ResourceContents:
    """``ResourceContents`` of ``uri``: a string as text (``text/plain``), bytes as a base64
    blob (``application/octet-stream``), anything else as JSON (``application/json``);
    ``mime_type`` overrides the type. A ``ResourceContents`` is returned as it is.
    """
    if isinstance(value, t.ResourceContents):
        return value
    if isinstance(value, str):
        return t.ResourceContents(uri=uri, mimeType=mime_type or "text/plain", text=value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return t.ResourceContents(uri=uri, mimeType=mime_type or "application/octet-stream", blob=_b64(bytes(value)))
    return t.ResourceContents(uri=uri, mimeType=mime_type or "application/json", text=_json_text(_to_builtins(value)))


# ------------------------------------------------------------------ definitions
class CacheHints:
    """A primitive's ``ttl_ms`` and ``cache_scope`` (None: the server's). (A plain class, not a
    dataclass: the dataclasses module is not loaded for it.)"""

    __slots__ = ("ttl_ms", "cache_scope")

    def __init__(self, ttl_ms: int | None = None, cache_scope: CacheScope | None = None) -> None:
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope

    def __repr__(self) -> str:
        return f"CacheHints(ttl_ms={self.ttl_ms!r}, cache_scope={self.cache_scope!r})"


class ToolDef:
    """A registered tool (``server.tools[name]``): its wire ``Tool`` (``wire``), its signature,
    and the options each extension keeps for it (:meth:`options`)."""

    __slots__ = ("name", "sig", "output", "wire", "blocking", "cache", "header_map", "extensions", "scopes")

    def __init__(self, fn: Callable[..., Any], *, name: str | None, title: str | None, description: str | None,
                 annotations: t.ToolAnnotations | dict[str, Any] | None, icons: list[Any] | None, meta: dict[str, Any] | None,
                 blocking: bool, structured_output: bool | None) -> None:
        self.name = name or fn.__name__
        self.sig = Signature(fn, "tool")
        self.output = Output(fn) if structured_output is not False else None
        if self.output is not None and not self.output.structured:
            self.output = None
        if structured_output is True and self.output is None:
            raise TypeError(f"tool {self.name!r}: structured_output=True needs a describable return type")
        self.blocking = blocking
        self.wire = t.Tool(
            name=self.name,
            inputSchema=self.sig.input_schema,
            title=_opt(title),
            description=_opt(description or self.sig.description),
            outputSchema=self.output.schema if self.output and self.output.schema is not None else UNSET,
            annotations=msgspec.convert(annotations, t.ToolAnnotations) if isinstance(annotations, dict) else _opt(annotations),
            icons=_opt(icons),
            meta=_opt(meta),
        )
        self.header_map: dict[str, tuple[str, ...]] | None = None
        self.cache = CacheHints()
        #: Per-extension options, by extension id: as given to ``tool(extensions=...)`` until
        #: ``add_tool`` hands each to its extension, then what the extension kept.
        self.extensions: dict[str, Any] = {}
        #: OAuth scopes a caller needs to see and call it (when the server is protected).
        self.scopes: frozenset[str] = frozenset()

    def options(self, ext_id: str) -> Any:
        """What extension ``ext_id`` keeps for this tool (from ``tool(extensions={ext_id: ...})``), or None."""
        return self.extensions.get(ext_id)

    def set_meta(self, key: str, value: Any) -> None:
        """Publish ``_meta[key] = value`` on this tool in ``tools/list`` (e.g. an extension's
        per-tool data); ``value`` None removes the key."""
        meta = dict(self.wire.meta) if isinstance(self.wire.meta, dict) else {}
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
        self.wire.meta = meta or UNSET

    def to_result(self, value: Any) -> t.CallToolResult:
        """The ``tools/call`` result for the handler's return value (structured content when the
        tool has an output schema; a ``CallToolResult`` passes through)."""
        if isinstance(value, t.CallToolResult):
            return value
        out = self.output
        if out is not None:
            data = out.dump(value) if out.dump is not None else _to_builtins(value)
            structured = {"result": data} if out.wrap else data
            return t.CallToolResult(content=[t.TextContent(text=_json_text(structured))], structuredContent=structured)
        return t.CallToolResult(content=to_content(value))


class ResourceDef:
    __slots__ = ("uri", "sig", "wire", "mime_type", "cache", "blocking", "scopes")

    def __init__(self, fn: Callable[..., Any], uri: str, *, name: str | None, title: str | None, description: str | None,
                 mime_type: str | None, size: int | None, annotations: Any, icons: list[Any] | None, meta: dict[str, Any] | None,
                 cache: CacheHints, blocking: bool) -> None:
        self.uri = uri
        self.sig = Signature(fn, "resource")
        self.mime_type = mime_type
        self.cache = cache
        self.blocking = blocking
        self.scopes: frozenset[str] = frozenset()
        self.wire = t.Resource(
            uri=uri, name=name or fn.__name__, title=_opt(title), description=_opt(description or self.sig.description),
            mimeType=_opt(mime_type), size=_opt(size), annotations=_opt(annotations), icons=_opt(icons), meta=_opt(meta),
        )


class TemplateDef:
    __slots__ = ("template", "sig", "wire", "mime_type", "cache", "blocking", "scopes")

    def __init__(self, fn: Callable[..., Any], uri_template: str, *, name: str | None, title: str | None,
                 description: str | None, mime_type: str | None, annotations: Any, icons: list[Any] | None,
                 meta: dict[str, Any] | None, cache: CacheHints, blocking: bool) -> None:
        from ._uritemplate import UriTemplate

        self.template = UriTemplate(uri_template)
        self.sig = Signature(fn, "resource")
        missing = [p for p in self.sig.param_names if p not in self.template.variables]
        if missing:
            raise TypeError(f"resource template {uri_template!r}: handler parameters {missing} are not template variables")
        self.mime_type = mime_type
        self.cache = cache
        self.blocking = blocking
        self.scopes: frozenset[str] = frozenset()
        self.wire = t.ResourceTemplate(
            uriTemplate=uri_template, name=name or fn.__name__, title=_opt(title),
            description=_opt(description or self.sig.description), mimeType=_opt(mime_type),
            annotations=_opt(annotations), icons=_opt(icons), meta=_opt(meta),
        )


class PromptDef:
    __slots__ = ("name", "sig", "wire", "required", "blocking", "cache", "scopes")

    def __init__(self, fn: Callable[..., Any], *, name: str | None, title: str | None, description: str | None,
                 icons: list[Any] | None, meta: dict[str, Any] | None, blocking: bool) -> None:
        self.name = name or fn.__name__
        self.sig = Signature(fn, "prompt")
        self.blocking = blocking
        self.cache = CacheHints()
        self.scopes: frozenset[str] = frozenset()
        props = self.sig.input_schema.get("properties", {})
        required = set(self.sig.input_schema.get("required", []))
        self.required = required
        args = [
            t.PromptArgument(name=p, description=_opt(props.get(p, {}).get("description")), required=p in required)
            for p in self.sig.param_names
        ]
        self.wire = t.Prompt(
            name=self.name, title=_opt(title), description=_opt(description or self.sig.description),
            arguments=args or UNSET, icons=_opt(icons), meta=_opt(meta),
        )

    def to_result(self, value: Any) -> t.GetPromptResult:
        if isinstance(value, t.GetPromptResult):
            return value
        items = value if isinstance(value, (list, tuple)) else [value]
        messages = []
        for item in items:
            if isinstance(item, t.PromptMessage):
                messages.append(item)
            elif isinstance(item, str):
                messages.append(t.PromptMessage(role="user", content=t.TextContent(text=item)))
            elif isinstance(item, _CONTENT):
                messages.append(t.PromptMessage(role="user", content=item))
            else:
                messages.append(msgspec.convert(item, t.PromptMessage))
        return t.GetPromptResult(messages=messages, description=self.wire.description)


def user(content: str | Any) -> t.PromptMessage:
    """A user-role prompt message."""
    return t.PromptMessage(role="user", content=t.TextContent(text=content) if isinstance(content, str) else content)


def assistant(content: str | Any) -> t.PromptMessage:
    """An assistant-role prompt message."""
    return t.PromptMessage(role="assistant", content=t.TextContent(text=content) if isinstance(content, str) else content)


def not_found(uri: str) -> errors.MCPError:
    return errors.ResourceNotFound(uri)
