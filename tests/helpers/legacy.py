"""2025-11-25 sessions over Streamable HTTP, in raw requests: the session (``Mcp-Session-Id``),
its GET event stream, and the check that an endpoint still serves both eras."""

from __future__ import annotations

import contextlib
import queue
import re
import threading
from typing import Any

import httpx

from tests.helpers.messages import (
    JSON_ACCEPT,
    LEGACY,
    META_CAPS,
    META_VERSION,
    MODERN,
    call,
    check_legacy_message,
    headers_for,
    init_msg,
    iter_sse,
    messages_in,
    note,
    override,
    req,
    structured,
)

VISIBLE_ASCII = re.compile(r"^[\x21-\x7e]+$")
MODERN_META = {META_VERSION: MODERN, META_CAPS: {}}


def messages_of(resp: httpx.Response) -> list[dict]:
    """The messages of a legacy session's HTTP answer (JSON or SSE), each checked."""
    msgs = messages_in(resp.headers.get("content-type", ""), resp.text)
    for m in msgs:
        check_legacy_message(m)
    return msgs


class LegacyHttp:
    """One 2025-11-25 client session on a Streamable HTTP endpoint, in raw requests."""

    def __init__(self, url: str, client: httpx.Client | None = None) -> None:
        self.url = url
        self.client = client or httpx.Client(timeout=15)
        self.sid: str | None = None
        self.version: str | None = None

    def headers(self, **extra: str) -> dict[str, str]:
        h = dict(JSON_ACCEPT)
        if self.sid is not None:
            h["Mcp-Session-Id"] = self.sid
        if self.version is not None:
            h["MCP-Protocol-Version"] = self.version
        h.update(extra)
        return h

    def initialize(self, version: str = LEGACY, caps: dict | None = None) -> dict:
        resp = self.client.post(self.url, json=init_msg(version, caps=caps), headers=dict(JSON_ACCEPT))
        assert resp.status_code == 200, (resp.status_code, resp.text)
        sid = resp.headers.get("mcp-session-id")
        assert sid and VISIBLE_ASCII.match(sid), resp.headers
        (msg,) = messages_of(resp)
        self.sid = sid
        self.version = msg["result"]["protocolVersion"]
        r = self.client.post(self.url, json=note("notifications/initialized"), headers=self.headers())
        assert r.status_code == 202, (r.status_code, r.text)
        return msg["result"]

    def post(self, msg: dict, **headers: str) -> httpx.Response:
        return self.client.post(self.url, json=msg, headers=self.headers(**headers))

    def ask(self, msg: dict) -> tuple[dict, list[dict]]:
        """Send a request: (its response, the messages streamed before it)."""
        resp = self.post(msg)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        msgs = messages_of(resp)
        assert msgs[-1].get("id") == msg["id"], msgs
        return msgs[-1], msgs[:-1]

    def delete(self) -> httpx.Response:
        return self.client.delete(self.url, headers=self.headers())

    def assert_alive(self) -> None:
        pong, _ = self.ask(req("alive-ping", "ping"))
        assert pong["result"] == {}
        added, _ = self.ask(call("alive-add", "add", a=40, b=2))
        assert structured(added["result"]) == 42, added


def modern_post(client: httpx.Client, url: str, msg: dict, **headers: str) -> httpx.Response:
    """POST a 2026-07-28 request (its ``_meta`` given) with the headers a modern client sends."""
    return client.post(url, json=msg, headers=override(headers_for(msg), headers))


def assert_endpoint_serves(url: str, client: httpx.Client | None = None) -> None:
    """A new legacy session works (initialize, ping, add, DELETE), and so does a stateless
    2026-07-28 request."""
    with httpx.Client(timeout=15) if client is None else contextlib.nullcontext(client) as c:
        s = LegacyHttp(url, c)
        assert s.initialize()["protocolVersion"] == LEGACY
        s.assert_alive()
        assert s.delete().status_code == 200
        r = modern_post(c, url, req("m", "server/discover", {"_meta": MODERN_META}))
        assert r.status_code == 200 and MODERN in r.json()["result"]["supportedVersions"], r.text


class GetStream:
    """The session's GET SSE stream, read on a thread into a queue of messages."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.client = httpx.Client(timeout=httpx.Timeout(30, read=None))
        self.msgs: queue.Queue[Any] = queue.Queue()
        self.status: int | None = None
        self.opened = threading.Event()
        self.ended = threading.Event()
        self._stop = False
        threading.Thread(target=self._run, args=(url, headers), daemon=True).start()
        assert self.opened.wait(10), "the GET stream did not open"

    def _run(self, url: str, headers: dict[str, str]) -> None:
        try:
            with self.client.stream("GET", url, headers={**headers, "Accept": "text/event-stream"}) as resp:
                self.status = resp.status_code
                self.opened.set()
                for msg in iter_sse(resp.iter_lines()):
                    if self._stop:
                        break
                    self.msgs.put(msg)
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self.opened.set()
            self.ended.set()

    def next(self, timeout: float = 10.0) -> dict:
        try:
            msg = self.msgs.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing on the GET stream within {timeout} s") from None
        check_legacy_message(msg)
        return msg

    def close(self) -> None:
        self._stop = True
        self.client.close()
