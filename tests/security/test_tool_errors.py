"""A tool's unexpected exception does not reach the client (issue 18, item 16).

By default the client reads ``Error executing tool NAME`` (``isError: true``) and the
exception is logged with its traceback; ``Server(expose_errors=True)`` adds its text;
``ToolError`` text is always sent (the deliberate way to tell the client).
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from mcpkit import Server, ToolError
from mcpkit.protocol import codec
from tests.helpers.messages import body

SECRET = "postgres://admin:hunter2@db.internal/prod"


def make_server(**kw: object) -> Server:
    server = Server("errors", "1.0.0", **kw)  # type: ignore[arg-type]

    @server.tool()
    def connect() -> str:
        raise RuntimeError(f"could not connect to {SECRET}")

    @server.tool()
    def refuse() -> str:
        raise ToolError("that record is locked")

    return server


def call(server: Server, name: str) -> dict:
    msg = body("tools/call", {"name": name, "arguments": {}})
    req = codec.decode(json.dumps(msg).encode())
    assert type(req) is codec.Request
    reply = asyncio.run(server.handle(req))
    return json.loads(reply.body)["result"]


def test_exception_text_is_not_sent_by_default_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="mcpkit.server"):
        result = call(make_server(), "connect")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Error executing tool connect"}]
    assert SECRET not in json.dumps(result)
    logged = [r for r in caplog.records if r.name == "mcpkit.server"]
    assert logged and logged[0].exc_info is not None and SECRET in str(logged[0].exc_info[1])


def test_expose_errors_opts_in_to_the_exception_text() -> None:
    result = call(make_server(expose_errors=True), "connect")
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"Error executing tool connect: could not connect to {SECRET}"


def test_tool_error_text_is_sent_as_is() -> None:
    result = call(make_server(), "refuse")
    assert result["isError"] is True and result["content"][0]["text"] == "that record is locked"
