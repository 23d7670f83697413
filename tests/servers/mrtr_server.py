"""A server for the MRTR tests (tests/test_mrtr.py, tests/test_shared_keys.py).

Serve it with ``python -m mcpkit serve [--http --port P] tests/servers/mrtr_server.py[:FACTORY]``:

- the module-level ``server`` takes its state keys from ``MCPKIT_STATE_KEYS`` (or a random
  per-process key when that is unset);
- ``keyed`` seals with :data:`KEY_A` (known to the tests, so they can mint state themselves);
- ``other_keys`` seals with :data:`KEY_B` only; ``rotated`` seals with KEY_B but still opens KEY_A;
- ``short_ttl`` seals with KEY_A and lets state expire after :data:`SHORT_TTL` seconds;
- ``single_use`` seals with KEY_A and accepts each requestState once (``state_single_use``).
"""

from __future__ import annotations

import secrets
from typing import Any

from mcpkit import Context, Server
from mcpkit.server._input import InputRequired

KEY_A = "iCzKk9rXJxiTQKgjCyq049t9a9kJr0HNItEKw6nOejU="  # 32 random bytes, base64url
KEY_B = "ThA2c4yrHNX6bIPkPp1FuF1yHV47gSw0hihmTebPuGY="
SHORT_TTL = 0.6

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
AGE_SCHEMA = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}
YES_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def build(*, state_keys: Any = None, state_ttl: float = 600.0, state_single_use: bool = False) -> Server:
    once = {"state_single_use": True} if state_single_use else {}
    server = Server("mrtr-test-server", "1.0.0", state_keys=state_keys, state_ttl=state_ttl, **once)

    @server.tool()
    async def greet(ctx: Context, greeting: str = "Hello", punctuation: str = "!") -> str:
        """Ask for the user's name (key ``user_name``), then greet them."""
        r = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        if r.action != "accept":
            return f"no name ({r.action})"
        return f"{greeting}, {r.content['name']}{punctuation}"

    @server.tool()
    async def two_step(ctx: Context) -> str:
        """Ask ``user_name``, and only once it is answered ask ``confirm``."""
        r = await ctx.elicit("Name?", NAME_SCHEMA, key="user_name")
        c = await ctx.elicit(f"Really greet {r.content['name']}?", YES_SCHEMA, key="confirm")
        return f"{r.content['name']}:{c.action}"

    @server.tool()
    async def wizard(ctx: Context) -> dict:
        """Three rounds: name, then age; ``ctx.state`` counts the runs and keeps a nonce."""
        ctx.state["runs"] = ctx.state.get("runs", 0) + 1
        nonce = ctx.state.setdefault("nonce", secrets.token_hex(8))
        name = await ctx.elicit(f"Name? [nonce {nonce}]", NAME_SCHEMA, key="name")
        ctx.state.setdefault("history", []).append(f"after-name-{ctx.state['runs']}")
        age = await ctx.elicit(f"Age, {name.content['name']}? [nonce {nonce}]", AGE_SCHEMA, key="age")
        return {"name": name.content["name"], "age": age.content["age"], "runs": ctx.state["runs"],
                "nonce": nonce, "history": ctx.state["history"]}

    @server.tool()
    async def ask_sample(ctx: Context, question: str) -> str:
        """Ask the client's model (key ``answer``)."""
        r = await ctx.sample(question, max_tokens=64, key="answer")
        return f"model {r.model} says: {r.content.text}"

    @server.tool()
    async def ask_roots(ctx: Context) -> str:
        """The client's roots (key ``roots``)."""
        roots = await ctx.list_roots(key="roots")
        return ",".join(r.uri for r in roots)

    @server.tool()
    async def consent(ctx: Context) -> str:
        """A URL-mode elicitation (needs elicitation.url)."""
        r = await ctx.elicit_url("Please consent", "https://example.com/consent", key="consent")
        return f"consent: {r.action}"

    @server.tool()
    async def both(ctx: Context) -> str:
        """Two questions at once: an elicitation and a sampling request."""
        got = await ctx.ask({
            "user_name": {"method": "elicitation/create",
                          "params": {"mode": "form", "message": "Name?", "requestedSchema": NAME_SCHEMA}},
            "capital": {"method": "sampling/createMessage",
                        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
                                   "maxTokens": 10}},
        })
        return f"{got['user_name'].content['name']} / {got['capital'].content.text}"

    @server.tool()
    async def progress_then_ask(ctx: Context) -> str:
        """Report progress, ask for a name, report progress again (HTTP: an SSE response)."""
        await ctx.report_progress(1, 2, "before asking")
        r = await ctx.elicit("Name?", NAME_SCHEMA, key="user_name")
        await ctx.report_progress(2, 2, "answered")
        return f"thanks {r.content['name']}"

    @server.prompt()
    async def intro(ctx: Context, topic: str) -> str:
        """A prompt that asks for the user's name first."""
        r = await ctx.elicit("Who is asking?", NAME_SCHEMA, key="user_name")
        return f"{r.content['name']} wants to talk about {topic}"

    @server.resource("mrtr://profile", mime_type="text/plain")
    async def profile(ctx: Context) -> str:
        """A resource that asks for a nickname first."""
        r = await ctx.elicit("Nickname?", NAME_SCHEMA, key="nick")
        return f"profile of {r.content['name']}"

    @server.completion(prompt="intro", argument="topic")
    def complete_topic(argument: str, value: str, context: dict[str, str]) -> list[str]:
        # A completion handler has no way to ask; try anyway: the server must not answer
        # completion/complete with input_required.
        raise InputRequired({"sneaky": {"method": "elicitation/create",
                                        "params": {"mode": "form", "message": "?", "requestedSchema": NAME_SCHEMA}}})

    return server


server = build()


def keyed() -> Server:
    return build(state_keys=[KEY_A])


def other_keys() -> Server:
    return build(state_keys=[KEY_B])


def rotated() -> Server:
    return build(state_keys=[KEY_B, KEY_A])


def short_ttl() -> Server:
    return build(state_keys=[KEY_A], state_ttl=SHORT_TTL)


def single_use() -> Server:
    return build(state_keys=[KEY_A], state_single_use=True)
