"""A real nginx for a test: round-robin over upstream servers, per request, no affinity
(no ``ip_hash``, no sticky cookie), streaming responses unbuffered, in its own temporary
prefix on a free loopback port."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.redis import system_binary
from tests.helpers.servers import free_port

CONF = """\
{user}
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream mcp {{
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 3600s;
            proxy_next_upstream off;
        }}
    }}
}}
"""


class Nginx:
    """nginx in front of ``upstreams`` (``host:port`` each)."""

    def __init__(self, upstreams: list[str]) -> None:
        self.binary = system_binary("nginx")
        self.prefix = tempfile.mkdtemp(prefix="mcpkit-nginx-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        servers = "\n".join(f"        server {u} max_fails=0;" for u in upstreams)
        # As root, nginx workers would switch to 'nobody', who cannot write our temp dirs.
        user = "user root root;" if os.geteuid() == 0 else ""
        conf = Path(self.prefix) / "nginx.conf"
        conf.write_text(CONF.format(user=user, prefix=self.prefix, servers=servers, port=self.port))
        self.proc = subprocess.Popen([self.binary, "-p", self.prefix, "-c", str(conf)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                httpx.get(self.url, timeout=1.0, trust_env=False)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        log = (Path(self.prefix) / "error.log")
        pytest.fail(f"nginx did not start: {log.read_text() if log.exists() else ''}", pytrace=False)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)
