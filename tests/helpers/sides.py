"""Async clients of a real server process, as seen on the wire: for ``subscriptions/listen``
streams (and cancellation), which need many requests in flight on one connection.

A :class:`StdioSide` is one ``python -m mcpkit serve SPEC`` process on asyncio pipes; an
:class:`HttpSide` is an ``httpx.AsyncClient`` to a Streamable HTTP URL, each listen on its own
streamed response. Every message the server writes is checked against the wire types.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import httpx

from tests.helpers.messages import META, VERSION, check_wire, headers_for, single_reply
from tests.helpers.messages import SUBSCRIPTION_ID as SID
from tests.helpers.paths import ROOT, serve_argv, subprocess_env

ACK = "notifications/subscriptions/acknowledged"
TIMEOUT = 10.0


class Listener:
    def __init__(self, id: Any, filt: dict[str, Any]) -> None:
        self.id = id
        self.filt = filt
        self.ack: dict[str, Any] | None = None
        self.notes: list[dict[str, Any]] = []  # after the acknowledgement
        self.foreign: list[dict[str, Any]] = []  # notifications on this stream for another id
        self.result: dict[str, Any] | None = None  # the response to the listen request
        self.server_cancelled: dict[str, Any] | None = None  # stdio: notifications/cancelled for it
        self.http_status: int | None = None
        self.acked = asyncio.Event()
        self.ended = asyncio.Event()
        self.resp: Any = None
        self.task: asyncio.Task | None = None

    def take(self, msg: dict[str, Any]) -> None:
        sid = (msg.get("params") or {}).get("_meta", {}).get(SID)
        if sid != self.id or type(sid) is not type(self.id):
            self.foreign.append(msg)
        elif msg["method"] == ACK:
            assert self.ack is None and not self.notes, "the acknowledgement must come first, once"
            self.ack = msg
            self.acked.set()
        else:
            assert self.ack is not None, f"a notification before the acknowledgement: {msg}"
            self.notes.append(msg)


class Side:
    """One client connection to a listen_server, as seen on the wire."""

    kind = ""
    _ids = itertools.count(1000)

    def request_msg(self, id: Any, method: str, p: dict[str, Any] | None = None,
                    meta: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": {**META, **(meta or {})}, **(p or {})}}

    async def listen(self, id: Any, filt: dict[str, Any], *, acked: bool = True) -> Listener:
        raise NotImplementedError

    async def cancel(self, lst: Listener) -> None:
        raise NotImplementedError

    async def request(self, method: str, p: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        raise NotImplementedError

    async def tool(self, name: str, args: dict[str, Any] | None = None) -> Any:
        reply = await self.request("tools/call", {"name": name, "arguments": args or {}})
        result = reply["result"]
        assert not result.get("isError"), result
        sc = result.get("structuredContent")
        return sc["result"] if isinstance(sc, dict) and "result" in sc else result["content"][0]["text"]

    async def assert_alive(self) -> None:
        reply = await self.request("server/discover")
        assert VERSION in reply["result"]["supportedVersions"]

    async def close(self) -> None: ...


class StdioSide(Side):
    kind = "stdio"

    def __init__(self, spec: str | Path) -> None:
        self.spec = spec
        self.log: list[dict[str, Any]] = []  # every message the server wrote, in order
        self.listeners: dict[tuple[type, Any], Listener] = {}
        self.pending: dict[tuple[type, Any], asyncio.Future] = {}
        self.methods: dict[tuple[type, Any], str] = {}
        self.progress: dict[Any, list[dict[str, Any]]] = {}
        self.stray: list[dict[str, Any]] = []
        self.stderr = b""

    async def start(self) -> StdioSide:
        self.proc = await asyncio.create_subprocess_exec(
            *serve_argv(self.spec), cwd=str(ROOT), env=subprocess_env(),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            limit=16 * 1024 * 1024)
        self.reader = asyncio.ensure_future(self._read())
        self.err_reader = asyncio.ensure_future(self._read_err())
        return self

    async def _read_err(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            assert line.endswith(b"\n"), line
            msg = json.loads(line)
            rid = msg.get("id")
            check_wire(msg, self.methods.get((type(rid), rid)))
            self.log.append(msg)
            self._dispatch(msg)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "result" in msg or "error" in msg:
            key = (type(msg["id"]), msg["id"])
            if key in self.listeners:
                lst = self.listeners[key]
                assert lst.result is None, f"a second response for listen {lst.id!r}: {msg}"
                lst.result = msg
                lst.ended.set()
            elif key in self.pending:
                self.pending.pop(key).set_result(msg)
            else:
                self.stray.append(msg)
            return
        params = msg.get("params") or {}
        if msg["method"] == "notifications/cancelled":
            rid = params.get("requestId")
            lst = self.listeners.get((type(rid), rid))
            if lst is None:
                self.stray.append(msg)
            else:
                assert lst.server_cancelled is None, msg
                lst.server_cancelled = msg
            return
        if msg["method"] == "notifications/progress":
            self.progress.setdefault(params.get("progressToken"), []).append(msg)
            return
        sid = params.get("_meta", {}).get(SID)
        lst = self.listeners.get((type(sid), sid))
        if lst is None:
            self.stray.append(msg)
        else:
            lst.take(msg)

    async def send(self, msg: dict[str, Any]) -> None:
        if "id" in msg and "method" in msg:
            self.methods[(type(msg["id"]), msg["id"])] = msg["method"]
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()

    async def listen(self, id: Any, filt: dict[str, Any], *, acked: bool = True) -> Listener:
        lst = self.listeners[(type(id), id)] = Listener(id, filt)
        await self.send(self.request_msg(id, "subscriptions/listen", {"notifications": filt}))
        if acked:
            await asyncio.wait_for(lst.acked.wait(), TIMEOUT)
        return lst

    async def cancel(self, lst: Listener) -> None:
        await self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": lst.id, "reason": "test is done"}})

    async def request(self, method: str, p: dict[str, Any] | None = None, *, id: Any = None,
                      meta: dict[str, Any] | None = None) -> dict[str, Any]:
        id = next(self._ids) if id is None else id
        fut = self.pending[(type(id), id)] = asyncio.get_running_loop().create_future()
        await self.send(self.request_msg(id, method, p, meta))
        try:
            return await asyncio.wait_for(fut, TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"no answer to {method}; stderr: {self.stderr.decode(errors='replace')}") from None

    async def sync(self) -> None:
        """Everything the server wrote before now has been read (its pipe is FIFO)."""
        await self.assert_alive()

    async def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        await asyncio.gather(self.reader, self.err_reader, return_exceptions=True)


class HttpSide(Side):
    kind = "http"

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT, read=None),
                                      limits=httpx.Limits(max_connections=200, max_keepalive_connections=20))
        self.open: list[Listener] = []

    async def start(self) -> HttpSide:
        return self

    def _post(self, msg: dict[str, Any]) -> httpx.Request:
        return self.http.build_request("POST", self.url, content=json.dumps(msg).encode(), headers=headers_for(msg))

    async def listen(self, id: Any, filt: dict[str, Any], *, acked: bool = True) -> Listener:
        lst = Listener(id, filt)
        msg = self.request_msg(id, "subscriptions/listen", {"notifications": filt})
        resp = await self.http.send(self._post(msg), stream=True)
        lst.resp = resp
        lst.http_status = resp.status_code
        if not resp.headers.get("content-type", "").startswith("text/event-stream"):
            body = await resp.aread()
            lst.result = json.loads(body)
            check_wire(lst.result, "subscriptions/listen")
            lst.ended.set()
            return lst
        assert resp.status_code == 200
        lst.task = asyncio.ensure_future(self._read(lst))
        self.open.append(lst)
        if acked:
            await asyncio.wait_for(lst.acked.wait(), TIMEOUT)
        return lst

    async def _read(self, lst: Listener) -> None:
        try:
            async for line in lst.resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                check_wire(msg, "subscriptions/listen")
                if "method" in msg:
                    assert msg["method"] != "notifications/cancelled", "no notifications/cancelled over HTTP"
                    lst.take(msg)
                else:
                    assert lst.result is None, msg
                    assert msg["id"] == lst.id and type(msg["id"]) is type(lst.id), msg
                    lst.result = msg
        except (httpx.HTTPError, asyncio.CancelledError):
            pass
        finally:
            lst.ended.set()

    async def cancel(self, lst: Listener) -> None:
        """Close the SSE response: the HTTP cancellation signal."""
        if lst.task is not None:
            lst.task.cancel()
            await asyncio.gather(lst.task, return_exceptions=True)
        await lst.resp.aclose()

    async def request(self, method: str, p: dict[str, Any] | None = None, *, id: Any = None,
                      meta: dict[str, Any] | None = None) -> dict[str, Any]:
        msg = self.request_msg(next(self._ids) if id is None else id, method, p, meta)
        r = await self.http.send(self._post(msg))
        reply, _ = single_reply(r.headers.get("content-type", ""), r.text)
        check_wire(reply, method)
        return reply

    async def close(self) -> None:
        for lst in self.open:
            if not lst.ended.is_set():
                await self.cancel(lst)
        await self.http.aclose()
