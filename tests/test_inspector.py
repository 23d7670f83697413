"""Interop: the MCP Inspector CLI against OUR stdio and Streamable HTTP servers.

The peer is the real thing, npm ``@modelcontextprotocol/inspector@2.12.0`` on Node.js 22,
installed by ``scripts/install_peers.sh inspector`` (cached under ``tests/.peers``). It is
run as its ``mcp-inspector`` bin does, in CLI mode on the 2026-07-28 ("modern") era::

    node <inspector>/clients/launcher/build/index.js --cli --protocol-era modern --format json \\
        <python examples/demo.py | http://127.0.0.1:PORT/mcp> --method tools/list
    ... --method tools/call --tool-name add --tool-arg a=2 --tool-arg b=3

Our servers run through recorders (``tests/interop/stdio_recorder.py``,
``tests/interop/http_recorder.py``) that log every message the Inspector sends and every
byte our server answers, so the tests can PROVE what happened on the wire: each Inspector
run opens ``subscriptions/listen`` (it does so on connect when the server advertises a
``listChanged`` capability the Inspector wants, and ours does), our server acknowledges it
(``notifications/subscriptions/acknowledged``), and each request carries the per-request
log level ``_meta["io.modelcontextprotocol/logLevel"]`` (the Inspector stamps its default
``debug`` on every request of a modern-era connection).

A peer that cannot be installed (registry unreachable) FAILS these tests: CI installs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.messages import META_VERSION as PROTOCOL_VERSION_KEY
from tests.helpers.messages import SUBSCRIPTION_ID as SUBSCRIPTION_ID_KEY
from tests.helpers.messages import VERSION
from tests.helpers.paths import DEMO, HTTP_RECORDER, ROOT, STDIO_RECORDER, pythonpath
from tests.helpers.peers import install_peers
from tests.helpers.peers import tail as _tail
from tests.helpers.servers import running_server

DEMO_TOOLS = {"add", "convert_temperature", "count_down"}
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
LOG_LEVELS = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

INSTALL_TIMEOUT = 900  # a cold install takes well under a minute; a slow registry may take more
RUN_TIMEOUT = 90

TRANSPORTS = [pytest.param("stdio", id="stdio"), pytest.param("http", id="http")]


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="session")
def inspector() -> dict[str, str]:
    """Install (or find cached) the Inspector and a Node.js for it; FAIL, not skip, when impossible."""
    return install_peers(["inspector"], ("PEER_INSPECTOR_NODE", "PEER_INSPECTOR_CLI"),
                         "the MCP Inspector (npm @modelcontextprotocol/inspector@2.12.0 and a Node.js >= 22.19)",
                         timeout=INSTALL_TIMEOUT)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inspector")


@pytest.fixture(scope="module")
def http_server(workdir: Path) -> Iterator[tuple[str, Path]]:
    """Our real HTTP server (``python -m mcpkit serve --http ... examples/demo.py``, with its ASGI
    app wrapped by the recorder), on a free loopback port: (url, traffic log)."""
    traffic = workdir / "http-traffic.jsonl"
    traffic.touch()
    argv = lambda port: [sys.executable, str(HTTP_RECORDER), str(traffic),
                         "serve", "--http", "--port", str(port), str(DEMO)]
    with running_server(argv, timeout=30) as url:
        yield url, traffic


class Run:
    """One Inspector CLI run: its JSON output and the traffic our server saw during it."""

    def __init__(self, argv: list[str], proc: subprocess.CompletedProcess, sent: list[dict], received: list[dict]):
        self.argv, self.proc, self.sent, self.received = argv, proc, sent, received

    def describe(self) -> str:
        return (f"$ {' '.join(self.argv)}\nexit {self.proc.returncode}\nstdout: {_tail(self.proc.stdout)}\n"
                f"stderr: {_tail(self.proc.stderr)}\nclient->server: {[m.get('method') for m in self.sent]}")

    @property
    def output(self) -> dict[str, Any]:
        assert self.proc.returncode == 0, self.describe()
        try:
            out = json.loads(self.proc.stdout)
        except ValueError:
            pytest.fail(f"the Inspector printed no JSON:\n{self.describe()}", pytrace=False)
        assert "error" not in out, self.describe()
        return out["result"]

    def requests(self, method: str) -> list[dict]:
        return [m for m in self.sent if m.get("method") == method and "id" in m]


@pytest.fixture(scope="module")
def run_inspector(inspector: dict[str, str], http_server: tuple[str, Path], workdir: Path
                  ) -> Callable[..., Run]:
    """``run_inspector(transport, *method_args)`` -> Run (each distinct run happens once per module)."""
    cache: dict[tuple, Run] = {}
    home = workdir / "home"  # the Inspector's catalog/config/OAuth files stay out of the real $HOME
    home.mkdir(exist_ok=True)
    counter = iter(range(1, 10_000))

    def run(transport: str, *method_args: str) -> Run:
        key = (transport, *method_args)
        if key in cache:
            return cache[key]
        if transport == "stdio":
            traffic = workdir / f"stdio-traffic-{next(counter)}.jsonl"
            traffic.touch()
            target = ["--cwd", str(ROOT), "-e", f"PYTHONPATH={pythonpath()}",
                      sys.executable, str(STDIO_RECORDER), str(traffic), sys.executable, str(DEMO)]
        else:
            url, traffic = http_server
            target = ["--transport", "http", url]
        start = traffic.stat().st_size
        argv = [inspector["PEER_INSPECTOR_NODE"], inspector["PEER_INSPECTOR_CLI"],
                "--cli", "--protocol-era", "modern", "--format", "json", *target, *method_args]
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), NO_COLOR="1")
        for var in ("MCP_CATALOG_PATH", "MCP_CLIENT_CONFIG_PATH", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                    "https_proxy", "ALL_PROXY", "all_proxy"):
            env.pop(var, None)
        try:
            proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"the Inspector did not finish in {RUN_TIMEOUT} s: {' '.join(argv)}\n"
                        f"stdout: {_tail(exc.stdout)}\nstderr: {_tail(exc.stderr)}", pytrace=False)
        if transport == "stdio":
            _wait_for_stdio_recorder(traffic)
        with traffic.open("rb") as fh:
            fh.seek(start)
            records = [json.loads(line) for line in fh.read().decode().splitlines() if line.strip()]
        sent, received = (_stdio_messages if transport == "stdio" else _http_messages)(records)
        cache[key] = Run(argv, proc, sent, received)
        return cache[key]

    return run


LIST = ("--method", "tools/list")
CALL_ADD = ("--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3")
CALL_CONVERT = ("--method", "tools/call", "--tool-name", "convert_temperature",
                "--tool-arg", "value=212", "--tool-arg", "to=celsius")


# ------------------------------------------------------------------ the acceptance tests
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_inspector_lists_tools(run_inspector, transport: str) -> None:
    run = run_inspector(transport, *LIST)
    tools = {t["name"]: t for t in run.output["tools"]}
    assert DEMO_TOOLS <= set(tools), sorted(tools)
    add = tools["add"]
    assert add["inputSchema"]["type"] == "object"
    assert add["inputSchema"]["properties"]["a"]["type"] == "integer"
    assert sorted(add["inputSchema"].get("required", [])) == ["a", "b"]
    assert run.requests("tools/list"), run.describe()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_inspector_calls_add(run_inspector, transport: str) -> None:
    run = run_inspector(transport, *CALL_ADD)
    result = run.output
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"result": 5}
    texts = [c["text"] for c in result["content"] if c["type"] == "text"]
    assert texts and json.loads(texts[0]) == {"result": 5}
    calls = run.requests("tools/call")
    assert len(calls) == 1, run.describe()
    assert calls[0]["params"]["name"] == "add"
    assert calls[0]["params"]["arguments"] == {"a": 2, "b": 3}


@pytest.mark.parametrize("run_args", [pytest.param(LIST, id="tools-list"), pytest.param(CALL_ADD, id="tools-call")])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_inspector_run_opens_listen_and_sends_log_level(run_inspector, transport: str, run_args) -> None:
    """The recorded traffic of EACH run: a modern-era ``subscriptions/listen`` request that our
    server acknowledged, and the per-request ``io.modelcontextprotocol/logLevel`` in ``_meta``."""
    run = run_inspector(transport, *run_args)
    assert run.output is not None  # the run itself succeeded

    listens = run.requests("subscriptions/listen")
    assert listens, f"no subscriptions/listen request reached our server\n{run.describe()}"
    listen = listens[0]
    assert listen["params"]["_meta"][PROTOCOL_VERSION_KEY] == VERSION
    asked = listen["params"]["notifications"]
    assert asked.get("toolsListChanged") is True, asked
    acks = [m for m in run.received if m.get("method") == "notifications/subscriptions/acknowledged"
            and m.get("params", {}).get("_meta", {}).get(SUBSCRIPTION_ID_KEY) == listen["id"]]
    assert acks, f"our server did not acknowledge subscriptions/listen id={listen['id']!r}: {run.received}"
    assert acks[0]["params"]["notifications"].get("toolsListChanged") is True, acks[0]

    tool_requests = [m for m in run.sent if str(m.get("method", "")).startswith("tools/") and "id" in m]
    assert tool_requests, run.describe()
    levels = [m["params"].get("_meta", {}).get(LOG_LEVEL_KEY) for m in tool_requests]
    assert all(level in LOG_LEVELS for level in levels), f"tools/* requests without a valid logLevel: {levels}"
    assert any(m["params"]["_meta"].get(LOG_LEVEL_KEY) for m in run.sent if "params" in m and "_meta" in m["params"])

    # Our server answered every request the Inspector made (no error responses).
    errors = [m for m in run.received if "error" in m]
    assert not errors, errors


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_inspector_structured_output(run_inspector, transport: str) -> None:
    """``--tool-arg`` values are coerced by the tool's inputSchema; the result matches its outputSchema."""
    result = run_inspector(transport, *CALL_CONVERT).output
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"value": 100, "unit": "celsius"}


# ------------------------------------------------------------------ helpers
def _stdio_messages(records: list[dict]) -> tuple[list[dict], list[dict]]:
    sent, received = [], []
    for rec in records:
        try:
            msg = json.loads(rec["line"])
        except ValueError:
            continue
        for m in msg if isinstance(msg, list) else [msg]:
            (sent if rec["dir"] == "c2s" else received).append(m)
    return sent, received


def _http_messages(records: list[dict]) -> tuple[list[dict], list[dict]]:
    sent: list[dict] = []
    bodies: dict[int, list[str]] = {}
    for rec in records:
        if rec["dir"] == "c2s":
            if rec.get("body"):
                try:
                    msg = json.loads(rec["body"])
                except ValueError:
                    continue
                sent.extend(msg if isinstance(msg, list) else [msg])
        elif "chunk" in rec:
            bodies.setdefault(rec["request"], []).append(rec["chunk"])
    received: list[dict] = []
    for chunks in bodies.values():
        text = "".join(chunks)
        try:
            msg = json.loads(text)
            received.extend(msg if isinstance(msg, list) else [msg])
            continue
        except ValueError:
            pass
        for event in text.replace("\r\n", "\n").split("\n\n"):  # text/event-stream
            data = "\n".join(line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:"))
            if data.strip():
                try:
                    received.append(json.loads(data))
                except ValueError:
                    pass
    return sent, received


def _wait_for_stdio_recorder(traffic: Path) -> None:
    """The recorder (the Inspector's child) may still be flushing when the Inspector exits."""
    deadline = time.monotonic() + 5
    last = -1
    while time.monotonic() < deadline:
        size = traffic.stat().st_size
        if size == last and size > 0:
            return
        last = size
        time.sleep(0.2)
