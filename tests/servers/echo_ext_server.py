"""A toy extension built the way a third-party one would be (tests/test_extensions.py).

``Echo`` (``com.example/echo``) uses every part of the ``server.use()`` hook: a capability
with settings, a method gated on it, a per-tool option (published in the tool's ``_meta``
and read back on every call), a ``tools/call`` wrapper that negotiates per request, and a
typed context helper. Serve it with ``python tests/servers/echo_ext_server.py`` (stdio) or
``python -m mcpkit serve --http tests/servers/echo_ext_server.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from mcpkit import Context, Server
from mcpkit import types as t
from mcpkit.extensions import Extension
from mcpkit.server import Handler, ToolDef

EXT = "com.example/echo"
BADGE_META = "com.example/badge"


class SayParams(t.RequestParams, kw_only=True):
    text: str


class SayResult(t.Result, kw_only=True):
    text: str
    declared: bool


@dataclasses.dataclass(frozen=True)
class EchoOptions:
    badge: str
    repeat: int = 1


class Shout:
    """The per-request helper (``ctx.extension(Echo)``)."""

    def __init__(self, ctx: Context, echo: Echo) -> None:
        self.ctx = ctx
        self.echo = echo

    @property
    def declared(self) -> bool:
        return self.echo.declared(self.ctx)

    def __call__(self, text: str) -> str:
        """Upper-cased for clients that declared the extension, as is for the others."""
        return text.upper() if self.echo.loud and self.declared else text


class Echo(Extension[Shout]):
    id = EXT

    def __init__(self, loud: bool = True) -> None:
        self.loud = loud
        self.server: Server | None = None
        self.calls = 0

    def settings(self) -> dict[str, Any]:
        return {"loud": self.loud}

    def install(self, server: Server) -> None:
        self.server = server
        server.add_method("echo/say", self.say, SayParams, capability=self.capability)
        server.wrap_method("tools/call", self.tag)

    def tool_options(self, tool: ToolDef, options: Any) -> EchoOptions:
        if not isinstance(options, Mapping) or not isinstance(options.get("badge"), str) or set(options) - {"badge", "repeat"}:
            raise ValueError(f"tool {tool.name!r}: the {EXT} options are {{'badge': str, 'repeat': int}}")
        opts = EchoOptions(options["badge"], int(options.get("repeat", 1)))
        tool.set_meta(BADGE_META, opts.badge)
        return opts

    def context(self, ctx: Context) -> Shout:
        return Shout(ctx, self)

    async def say(self, ctx: Context, params: SayParams) -> SayResult:
        shout = ctx.extension(Echo)
        return SayResult(text=shout(params.text), declared=shout.declared)

    async def tag(self, ctx: Context, params: t.CallToolParams, call_next: Handler) -> Any:
        """Tools with the option get ``_meta[BADGE_META]`` on their result, for declaring clients only."""
        assert self.server is not None
        self.calls += 1
        result = await call_next(ctx, params)
        tool = self.server.tools.get(params.name)
        opts: EchoOptions | None = tool.options(EXT) if tool is not None else None
        if opts is not None and self.declared(ctx):
            meta = result.meta if isinstance(result.meta, dict) else {}
            result.meta = {**meta, BADGE_META: opts.badge * opts.repeat}
        return result


server = Server("echo-ext", "1.0.0")
server.use(Echo())


@server.tool(extensions={EXT: {"badge": "*", "repeat": 3}})
async def hello(ctx: Context, name: str) -> str:
    """Greets, loudly for clients that declared com.example/echo."""
    return ctx.extension(Echo)(f"hello {name}")


@server.tool()
def plain(name: str) -> str:
    """No extension options."""
    return f"plain {name}"


if __name__ == "__main__":
    server.run()
