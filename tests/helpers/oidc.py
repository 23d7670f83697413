"""A real authorization server for the resource-server tests: npm ``oidc-provider``
(installed by scripts/install_oidc.sh, configured by tests/oidc/provider.mjs: resource
indicators with ES256 JWT access tokens for one MCP endpoint, client credentials for
``cc-client``/``cc-secret``, dynamic registration, PKCE, DPoP, introspection), and an mcpkit
server protected by it on a real uvicorn in a thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.servers import free_port

ROOT = Path(__file__).resolve().parent.parent.parent


def install() -> dict[str, str]:
    """Install (once; cached) and return OIDC_PREFIX and OIDC_NODE; skip without npm."""
    if shutil.which("npm") is None and not os.environ.get("MCPKIT_OIDC_DIR"):
        pytest.skip("npm is needed to install oidc-provider")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "install_oidc.sh")], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"scripts/install_oidc.sh failed:\n{proc.stderr[-3000:]}")
    return dict(line.split("=", 1) for line in proc.stdout.split() if "=" in line)


class Provider:
    """oidc-provider on a loopback port, issuing tokens for ``resource``."""

    def __init__(self, installed: dict[str, str], resource: str, *, nonce: bool = False) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        script = Path(installed["OIDC_PREFIX"]) / "mcpkit-test-provider.mjs"
        shutil.copyfile(ROOT / "tests" / "oidc" / "provider.mjs", script)
        env = {**os.environ, "OIDC_PORT": str(self.port), "OIDC_RESOURCE": resource,
               "OIDC_DPOP_NONCE": "1" if nonce else "0", "NODE_ENV": "development"}
        self.proc = subprocess.Popen([installed["OIDC_NODE"], str(script)], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"oidc-provider exited: {self.proc.stderr.read() if self.proc.stderr else ''}")
            try:
                if httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("oidc-provider did not start within 30 s")

    def client_credentials(self, resource: str, *, scope: str = "mcp:tools", dpop: str | None = None) -> dict[str, Any]:
        headers = {"DPoP": dpop} if dpop else {}
        resp = httpx.post(f"{self.issuer}/token", auth=("cc-client", "cc-secret"), headers=headers,
                          data={"grant_type": "client_credentials", "scope": scope, "resource": resource})
        assert resp.status_code == 200, resp.text
        return resp.json()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class ThreadedServer:
    """An ASGI app on real uvicorn in a daemon thread of this process."""

    def __init__(self, app: Any, port: int) -> None:
        import uvicorn

        self.port = port
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started and time.time() < deadline:
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)
