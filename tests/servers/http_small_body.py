"""The HTTP test server behind a 1 KiB body limit: ``python tests/servers/http_small_body.py PORT``."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import uvicorn  # noqa: E402

from http_test_server import server  # noqa: E402

if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(server.http_app(max_body_bytes=1024), host="127.0.0.1", port=port, log_level="warning",
                lifespan="off", access_log=False)
