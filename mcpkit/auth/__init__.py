"""OAuth 2.1 authorization for mcpkit (the MCP authorization spec)."""
