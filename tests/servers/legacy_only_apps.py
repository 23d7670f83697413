"""examples/apps_server.py as a 2025-11-25-only server over stdio: ``server/discover`` is refused
(-32601), so clients settle on the ``initialize`` handshake (tests/test_inspect_apps.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from mcpkit.protocol import errors

_spec = importlib.util.spec_from_file_location("_apps_example", Path(__file__).parents[2] / "examples" / "apps_server.py")
assert _spec is not None and _spec.loader is not None
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
server = _example.server


async def _no_discover(ctx: Any, params: Any, call_next: Any) -> Any:
    raise errors.method_not_found("server/discover")


server.wrap_method("server/discover", _no_discover)

if __name__ == "__main__":
    server.run("stdio")
