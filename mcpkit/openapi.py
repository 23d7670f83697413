"""OpenAPI -> MCP: an HTTP API's operations as tools, called through an ``httpx.AsyncClient``.

::

    import httpx
    from mcpkit.openapi import from_openapi

    api = httpx.AsyncClient(base_url="https://api.example.com", headers={"Authorization": "Bearer ..."})
    server = from_openapi(spec, client=api)        # or Server.from_openapi(spec, client=api)

Each operation (OpenAPI 3.0 or 3.1, a dict or its JSON text) becomes one tool:

- its name is the ``operationId`` (else ``method_path``), its description the summary and
  description; GET is read-only, PUT idempotent, DELETE destructive (tool annotations);
- its path, query and header parameters are arguments of the same names (characters a Python
  name cannot hold become ``_``), with their schemas; a JSON (or form) request body is the
  argument ``body``; local ``$ref`` are resolved;
- a JSON answer is the tool's structured output (an object as it is, anything else as
  ``{"result": ...}``; the 2xx response's schema is the ``outputSchema``); other answers are
  text; an HTTP error status, or a request that fails, is a tool error (``isError``) saying so.

The client's own headers, auth and base URL go on every request (without a ``base_url`` the
spec's first ``servers`` URL is used, when it is absolute). httpx is imported only when this
module is.
"""

from __future__ import annotations

import inspect
import json
import keyword
import logging
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .errors import ToolError
from .protocol import types as t
from .server import Server, ToolDef

if TYPE_CHECKING:
    import httpx

__all__ = ["from_openapi"]

log = logging.getLogger("mcpkit.openapi")

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_LOCATIONS = ("path", "query", "header")
#: How deep ``$ref`` chains and nested schemas are inlined (a cycle becomes ``{}``: any value).
_MAX_DEPTH = 32
#: The most of a non-JSON answer or an error body shown.
_SHOWN = 2000


def from_openapi(spec: dict[str, Any] | str, client: httpx.AsyncClient, *, name: str | None = None,
                 server: Server | None = None, include: set[str] | None = None) -> Server:
    """A :class:`~mcpkit.Server` (or ``server``, extended) whose tools are ``spec``'s operations,
    each sent through ``client``. ``include``: only these operation ids (tool names).
    ``name`` defaults to the spec's ``info.title``. Raises ValueError for a spec it cannot read."""
    doc = _load(spec)
    info: dict[str, Any] = doc["info"] if isinstance(doc.get("info"), dict) else {}
    target = server if server is not None else Server(name or str(info.get("title") or "openapi"),
                                                      version=str(info.get("version") or "0"))
    base = _base_url(doc, client)
    paths = doc.get("paths")
    if not isinstance(paths, dict):
        raise ValueError("the OpenAPI document has no paths object")
    for path, item in paths.items():
        item = _deref(doc, item)
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method in _METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            tool_name = _tool_name(op.get("operationId") or f"{method}_{path.strip('/')}")
            if include is not None and tool_name not in include:
                continue
            try:
                target.add_tool(_Operation(doc, method, path, op, shared, client, base, tool_name).tool())
            except _Skip as exc:
                log.warning("OpenAPI %s %s is not a tool: %s", method.upper(), path, exc)
    return target


class _Skip(Exception):
    pass


def _load(spec: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError as exc:
            raise ValueError(f"the OpenAPI document is not JSON: {exc}") from None
    if not isinstance(spec, dict) or not str(spec.get("openapi", "")).startswith("3."):
        raise ValueError("not an OpenAPI 3 document (it needs an 'openapi': '3.x' field)")
    return spec


def _base_url(doc: dict[str, Any], client: httpx.AsyncClient) -> str:
    if str(client.base_url):
        return ""  # the client's base_url applies
    servers = doc.get("servers")
    url = servers[0].get("url") if isinstance(servers, list) and servers and isinstance(servers[0], dict) else None
    return url.rstrip("/") if isinstance(url, str) and url.startswith(("http://", "https://")) else ""


def _tool_name(raw: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", raw).strip("_")[:128] or "operation"


def _arg_name(raw: str, taken: set[str]) -> str:
    name = re.sub(r"\W", "_", raw)
    if not name.isidentifier() or keyword.iskeyword(name):
        name = f"{name}_" if name.isidentifier() else f"_{name}"
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _deref(doc: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """``node`` with a local ``$ref`` at its top followed (a chain, up to the depth limit)."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < _MAX_DEPTH:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise _Skip(f"only local $ref are followed, not {ref!r}")
        found: Any = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            found = found.get(part) if isinstance(found, dict) else None
        if found is None:
            raise _Skip(f"$ref {ref!r} points nowhere")
        node, depth = found, depth + 1
    return node


def _schema(doc: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """A JSON Schema with every local ``$ref`` inlined (a cycle past the depth limit: ``{}``)."""
    if depth > _MAX_DEPTH:
        return {}
    node = _deref(doc, node)
    if isinstance(node, dict):
        out = {k: _schema(doc, v, depth + 1) for k, v in node.items() if k not in ("xml", "example", "externalDocs")}
        if out.pop("nullable", False) is True and isinstance(out.get("type"), str):  # OpenAPI 3.0
            out["type"] = [out["type"], "null"]
        return out
    if isinstance(node, list):
        return [_schema(doc, v, depth + 1) for v in node]
    return node


class _Operation:
    """One operation: its input schema, and the call that sends it."""

    def __init__(self, doc: dict[str, Any], method: str, path: str, op: dict[str, Any], shared: list[Any],
                 client: httpx.AsyncClient, base: str, name: str) -> None:
        self.doc, self.method, self.path, self.op, self.client, self.base, self.name = doc, method, path, op, client, base, name
        #: argument name -> (where, the parameter's own name)
        self.args: dict[str, tuple[str, str]] = {}
        self.body_kind: str | None = None
        properties: dict[str, Any] = {}
        required: list[str] = []
        taken: set[str] = {"body"}
        params: dict[tuple[str, str], dict[str, Any]] = {}
        for p in [*shared, *(op.get("parameters") or [])]:  # the operation's override the path's
            p = _deref(doc, p)
            if isinstance(p, dict) and isinstance(p.get("name"), str):
                params[(p.get("in", ""), p["name"])] = p
        for (where, pname), p in params.items():
            if where not in _LOCATIONS:
                if p.get("required"):
                    raise _Skip(f"a required {where} parameter {pname!r} (not supported)")
                continue
            arg = _arg_name(pname, taken)
            self.args[arg] = (where, pname)
            prop = _schema(doc, p.get("schema") or {})
            if isinstance(prop, dict) and p.get("description") and "description" not in prop:
                prop = {**prop, "description": p["description"]}
            properties[arg] = prop
            if p.get("required") or where == "path":
                required.append(arg)
        body = _deref(doc, op.get("requestBody"))
        if isinstance(body, dict) and isinstance(body.get("content"), dict):
            content = body["content"]
            kind = next((k for k in ("application/json", "application/x-www-form-urlencoded") if k in content),
                        next((k for k in content if k.endswith("+json")), None))
            if kind is None:
                if body.get("required"):
                    raise _Skip(f"its request body is {', '.join(content)} (JSON and forms are supported)")
            else:
                self.body_kind = "form" if kind.endswith("urlencoded") else "json"
                prop = _schema(doc, (content[kind] or {}).get("schema") or {})
                if isinstance(prop, dict) and body.get("description") and "description" not in prop:
                    prop = {**prop, "description": body["description"]}
                properties["body"] = prop
                if body.get("required"):
                    required.append("body")
        self.input_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            self.input_schema["required"] = required
        self.required = set(required)
        self.output_schema = self._output_schema()

    def _output_schema(self) -> dict[str, Any] | None:
        responses = self.op.get("responses")
        if not isinstance(responses, dict):
            return None
        for status, resp in sorted(responses.items(), key=lambda kv: str(kv[0])):
            if not str(status).startswith("2"):
                continue
            resp = _deref(self.doc, resp)
            content = resp.get("content") if isinstance(resp, dict) else None
            media = (content or {}).get("application/json") if isinstance(content, dict) else None
            if not isinstance(media, dict) or "schema" not in media:
                return None
            schema = _schema(self.doc, media["schema"])
            if isinstance(schema, dict) and schema.get("type") == "object":
                return schema
            return {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        return None

    def tool(self) -> ToolDef:
        """The tool: a handler whose signature names the arguments, the schemas set on it."""
        names = [*self.args, *(["body"] if "body" in self.input_schema["properties"] else [])]

        async def call(**values: Any) -> t.CallToolResult:
            return await self.send(values)

        call.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=Any,
                              **({} if n in self.required else {"default": None})) for n in names])
        call.__annotations__ = {n: Any for n in names}
        call.__name__ = call.__qualname__ = re.sub(r"\W", "_", self.name)
        summary, text = self.op.get("summary"), self.op.get("description")
        description = "\n\n".join(s for s in (summary, text) if isinstance(s, str) and s) or None
        annotations = {"get": {"readOnlyHint": True}, "head": {"readOnlyHint": True},
                       "put": {"idempotentHint": True}, "delete": {"destructiveHint": True}}.get(self.method)
        tool = ToolDef(call, name=self.name, title=None, description=description,
                       annotations=dict(annotations) if annotations else None, icons=None, meta=None,
                       blocking=False, structured_output=False)
        tool.wire.inputSchema = self.input_schema
        if self.output_schema is not None:
            tool.wire.outputSchema = self.output_schema
        return tool

    async def send(self, values: dict[str, Any]) -> t.CallToolResult:
        import httpx

        path = self.path
        query: dict[str, Any] = {}
        headers: dict[str, str] = {}
        for arg, (where, pname) in self.args.items():
            value = values.get(arg)
            if value is None:
                continue
            if where == "path":
                path = path.replace("{" + pname + "}", quote(_scalar(value), safe=""))
            elif where == "query":
                query[pname] = [_scalar(v) for v in value] if isinstance(value, list) else _scalar(value)
            else:
                headers[pname] = _scalar(value)
        body = values.get("body")
        extra: dict[str, Any] = {}
        if body is not None and self.body_kind == "json":
            extra["json"] = body
        elif body is not None and self.body_kind == "form":
            if not isinstance(body, dict):
                raise ToolError(f"{self.name}: the form body must be an object")
            extra["data"] = {k: _scalar(v) for k, v in body.items()}
        try:
            resp = await self.client.request(self.method.upper(), self.base + path, params=query, headers=headers,
                                             **extra)
        except httpx.HTTPError as exc:
            raise ToolError(f"{self.method.upper()} {path} failed: {exc or type(exc).__name__}") from None
        return self.answer(resp, path)

    def answer(self, resp: httpx.Response, path: str) -> t.CallToolResult:
        kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        is_json = kind == "application/json" or kind.endswith("+json")
        if resp.status_code >= 400:
            said = " ".join(resp.text[:_SHOWN].split())
            raise ToolError(f"{self.method.upper()} {path}: HTTP {resp.status_code} {resp.reason_phrase}"
                            f"{': ' + said if said else ''}")
        if not resp.content:
            return t.CallToolResult(content=[t.TextContent(text=f"HTTP {resp.status_code} {resp.reason_phrase}")])
        if not is_json:
            return t.CallToolResult(content=[t.TextContent(text=resp.text[:_SHOWN * 50])])
        try:
            data = resp.json()
        except ValueError:
            raise ToolError(f"{self.method.upper()} {path}: the answer says JSON and is not") from None
        structured = data if isinstance(data, dict) else {"result": data}
        return t.CallToolResult(content=[t.TextContent(text=json.dumps(data, ensure_ascii=False))],
                                structuredContent=structured)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
