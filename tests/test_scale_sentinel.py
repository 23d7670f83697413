"""Redis Sentinel: the backends follow a failover (real redis-server and sentinel processes).

A primary, a replica and one sentinel on loopback; a worker is served with a
``redis+sentinel://`` URL. The primary is killed mid-run: the open listen stream ends
cleanly (its graceful result), the task and the legacy session written before survive on the
promoted replica, and new work continues there. Bounded: the failover is configured to
happen within a few seconds, and every wait has a deadline.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcpkit.backends._redis_url import parse_sentinel
from tests.helpers.messages import init_msg
from tests.helpers.redis import RedisServer, system_binary
from tests.helpers.servers import free_port
from tests.test_scale_workers import Worker, get, legacy_post, poll

SERVICE = "mcpkit-primary"


class Replica(RedisServer):
    def __init__(self, primary: RedisServer) -> None:
        super().__init__()
        self.primary = primary

    def start(self, timeout: float = 10.0) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--daemonize", "no", "--logfile", str(Path(self.dir) / "redis.log"),
             "--replicaof", "127.0.0.1", str(self.primary.port)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ping() and b"master_link_status:up" in self.command("INFO", "replication"):
                return
            time.sleep(0.05)
        pytest.fail("the replica did not sync with the primary", pytrace=False)


class Sentinel:
    def __init__(self, primary: RedisServer, tmp: Path) -> None:
        self.port = free_port()
        conf = tmp / "sentinel.conf"
        conf.write_text(f"port {self.port}\nbind 127.0.0.1\ndir {tmp}\n"
                        f"sentinel monitor {SERVICE} 127.0.0.1 {primary.port} 1\n"
                        f"sentinel down-after-milliseconds {SERVICE} 600\n"
                        f"sentinel failover-timeout {SERVICE} 4000\n"
                        f"sentinel parallel-syncs {SERVICE} 1\n")
        # redis-sentinel is redis-server started in sentinel mode (Debian ships both names).
        self.proc = subprocess.Popen([system_binary("redis-server"), str(conf), "--sentinel"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.url = f"redis+sentinel://127.0.0.1:{self.port}/{SERVICE}/0"

    def primary_port(self) -> int | None:
        import redis

        try:
            addr = redis.Redis(port=self.port, socket_timeout=1).sentinel_get_master_addr_by_name(SERVICE)
        except redis.RedisError:
            return None
        return int(addr[1]) if addr else None

    def wait_ready(self, primary: RedisServer, replica: RedisServer, timeout: float = 15.0) -> None:
        import redis

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                replicas = redis.Redis(port=self.port, socket_timeout=1).sentinel_slaves(SERVICE)
            except redis.RedisError:
                replicas = []
            if self.primary_port() == primary.port and any(int(r["port"]) == replica.port for r in replicas):
                return
            time.sleep(0.1)
        pytest.fail("the sentinel did not see the primary and its replica", pytrace=False)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[RedisServer, Replica, Sentinel]]:
    primary = RedisServer()
    primary.start()
    replica = Replica(primary)
    sentinel: Sentinel | None = None
    try:
        replica.start()
        sentinel = Sentinel(primary, tmp_path)
        sentinel.wait_ready(primary, replica)
        yield primary, replica, sentinel
    finally:
        if sentinel is not None:
            sentinel.stop()
        replica.close()
        primary.close()


def test_sentinel_urls_parse() -> None:
    p = parse_sentinel("redis+sentinel://:pw@a:1,b,[::1]:3/svc/2?sentinel_password=sp")
    assert p.sentinels == [("a", 1), ("b", 26379), ("::1", 3)]
    assert (p.service, p.db, p.password, p.sentinel_password, p.ssl) == ("svc", 2, "pw", "sp", False)
    assert parse_sentinel("rediss+sentinel://h/svc").ssl
    for bad in ("redis+sentinel://h:1", "redis+sentinel://h:x/svc", "redis+sentinel://h:1/svc/db",
                "redis+sentinel://h:70000/svc", "redis://h/svc", "redis+sentinel:///svc"):
        with pytest.raises(ValueError):
            parse_sentinel(bad)


def test_a_primary_failover_keeps_tasks_and_sessions_and_work_continues(
        cluster: tuple[RedisServer, Replica, Sentinel]) -> None:
    primary, replica, sentinel = cluster
    w = Worker(sentinel.url)
    try:
        # Work written through the primary: a finished task, a running one, a legacy session.
        done_id = w.wire.result("tools/call", {"name": "sleepy", "arguments": {"seconds": 0.05}})["taskId"]
        assert poll(w, done_id)["status"] == "completed"
        sid = legacy_post(w, init_msg()).headers["mcp-session-id"]
        assert legacy_post(w, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid).status_code == 202
        listen = w.wire.message("subscriptions/listen", {"notifications": {"resourceSubscriptions": ["notes://groceries"]}})
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}
        assert primary.command("WAIT", "1", "2000").strip() == b":1"  # the replica has it all
        with w.http.stream("POST", w.url, content=json.dumps(listen).encode(), headers=headers,
                           timeout=httpx.Timeout(30.0)) as stream:
            lines = stream.iter_lines()
            for line in lines:
                if line.startswith("data:") and "acknowledged" in line:
                    break
            assert primary.proc is not None
            primary.proc.send_signal(signal.SIGKILL)  # the primary dies; the sentinel promotes the replica
            primary.proc.wait()
            started = time.monotonic()
            rest = [line for line in lines if line.startswith("data:")]
        assert time.monotonic() - started < 20
        final = json.loads(rest[-1][5:])
        assert final["id"] == listen["id"] and "result" in final, rest  # ended cleanly, not reset

        deadline = time.monotonic() + 20
        while sentinel.primary_port() != replica.port:
            assert time.monotonic() < deadline, "no failover"
            time.sleep(0.1)
        # New work continues on the promoted replica (after a short refusal window at most).
        deadline = time.monotonic() + 20
        while True:
            status, reply = w.wire.call("tools/call", {"name": "sleepy", "arguments": {"seconds": 0.05}})
            if "result" in reply:
                break
            assert time.monotonic() < deadline, reply
            time.sleep(0.2)
        assert poll(w, reply["result"]["taskId"])["status"] == "completed"
        # What was written before the failover is still there.
        assert get(w, done_id)["status"] == "completed"
        r = legacy_post(w, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, sid)
        assert r.status_code == 200 and "tools" in r.json()["result"], r.text
        assert b"role:master" in replica.command("INFO", "replication")
    finally:
        w.close()
