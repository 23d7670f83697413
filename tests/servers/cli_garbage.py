"""Not an MCP server: it answers every line it reads with a log line on stdout (a common
mistake), so a client never gets an answer. The CLI must show what it wrote."""

import sys

print("starting weather server v0.1", flush=True)
for line in sys.stdin:
    print(f"DEBUG got {len(line)} bytes", flush=True)
