"""Answering a server's elicitation on the terminal (``mcpkit call`` and ``prompt``, when stdin
and stderr are a terminal): the form's fields are asked one by one on stderr, so stdout keeps
only the result. The ``--timeout`` clock stops while the person is asked."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ._args import types_of
from ._safe import clean

if TYPE_CHECKING:
    from ..protocol import types as t
    from ._target import Target


class _Cancelled(Exception):
    pass


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def terminal_elicitation(target: Target) -> Any:
    """An elicitation handler that asks on the terminal."""

    lock = asyncio.Lock()  # one question on the terminal at a time

    async def ask(params: t.ElicitRequestParams) -> dict[str, Any]:
        target.pause_deadline()
        try:
            async with lock:
                return await _ask(params)
        except _Cancelled:
            return {"action": "cancel"}
        finally:
            target.resume_deadline()

    return ask


async def _line(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    text = await _read_line()
    if not text:  # EOF (Ctrl-D)
        sys.stderr.write("\n")
        raise _Cancelled
    return text.rstrip("\n")


async def _read_line() -> str:
    """One line of stdin ("" at EOF), read on the event loop: Ctrl-C (which cancels the
    command) ends the wait at once. A thread blocked in ``readline`` would keep the process
    alive until Enter, as ``asyncio.run`` waits for its threads."""
    try:
        fd = sys.stdin.fileno()
        await _readable(fd)
    except (AttributeError, ValueError, OSError, NotImplementedError):  # no selector for it (Windows)
        line: str = await asyncio.to_thread(sys.stdin.readline)
        return line
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 4096)  # a terminal in canonical mode gives a line at a time
        chunks.append(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return b"".join(chunks).decode(sys.stdin.encoding or "utf-8", "replace")
        await _readable(fd)


async def _readable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def _ask(params: t.ElicitRequestParams) -> dict[str, Any]:
    from msgspec import UNSET

    sys.stderr.write(f"\nThe server asks: {clean(params.message)}\n")
    if params.mode == "url":
        sys.stderr.write(f"  open {clean(params.url)}\n")
        answer = await _line("  done? [y/N] ")
        return {"action": "accept" if answer.strip().lower() in ("y", "yes") else "decline"}
    schema = params.requestedSchema if params.requestedSchema is not UNSET else {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or []) if isinstance(schema, dict) else set()
    content: dict[str, Any] = {}
    for name, prop in (props or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        value = await _field(name, prop, name in required)
        if value is not _SKIP:
            content[name] = value
    answer = await _line("  send this answer? [Y/n, or 'decline'] ")
    if answer.strip().lower() in ("n", "no"):
        return {"action": "cancel"}
    if answer.strip().lower() == "decline":
        return {"action": "decline"}
    return {"action": "accept", "content": content}


_SKIP: Any = object()


def titled_choices(prop: dict[str, Any]) -> list[tuple[Any, str]]:
    """A titled single-select enum's (value, title) pairs: ``oneOf``/``anyOf`` of ``{const,
    title}``, or ``enum`` with ``enumNames`` (the older form); [] for any other field."""
    branches = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(branches, list) and branches and all(isinstance(b, dict) and "const" in b for b in branches):
        return [(b["const"], str(b.get("title") or b["const"])) for b in branches]
    names = prop.get("enumNames")
    if isinstance(prop.get("enum"), list) and isinstance(names, list) and len(names) == len(prop["enum"]):
        return [(v, str(n)) for v, n in zip(prop["enum"], names, strict=True)]
    return []


async def _field(name: str, prop: dict[str, Any], required: bool) -> Any:
    types = types_of(prop)
    choices = titled_choices(prop)
    values = [v for v, _ in choices] or prop.get("enum")
    if choices:
        hint = f"1-{len(choices)} or the value"
    else:
        hint = "|".join(json.dumps(v) for v in prop["enum"]) if "enum" in prop else " or ".join(types) or "text"
    extra = f", default {json.dumps(prop['default'])}" if "default" in prop else ("" if required else ", optional")
    title = prop.get("title") or prop.get("description") or ""
    while True:  # the name, title, choices and default are the server's words
        if choices:
            sys.stderr.write(clean(f"  {name}{' - ' + str(title) if title else ''}:\n"))
            for i, (value, label) in enumerate(choices, 1):
                sys.stderr.write(clean(f"    {i}. {value}{' - ' + label if label != str(value) else ''}\n"))
            text = await _line(clean(f"  choose ({hint}{extra}): "))
        else:
            text = await _line(clean(f"  {name}{' - ' + str(title) if title else ''} ({hint}{extra}): "))
        if not text:
            if "default" in prop:
                return prop["default"]
            if not required:
                return _SKIP
            sys.stderr.write("    an answer is needed\n")
            continue
        if choices and text.strip().isdigit() and 1 <= int(text) <= len(choices):
            return choices[int(text) - 1][0]
        value = _convert(text, types)
        if value is _SKIP or (values is not None and value not in values):
            sys.stderr.write(clean(f"    expected {hint}\n"))
            continue
        return value


def _convert(text: str, types: list[str]) -> Any:
    if "boolean" in types and text.strip().lower() in ("y", "yes", "true", "n", "no", "false"):
        return text.strip().lower() in ("y", "yes", "true")
    if "integer" in types:
        try:
            return int(text)
        except ValueError:
            pass
    if "number" in types:
        try:
            return float(text)
        except ValueError:
            pass
    if not types or "string" in types:
        return text
    return _SKIP
