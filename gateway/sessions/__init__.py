"""Connections to MCP servers: the session pool, the bounded stdio transport, HTTP answer limits and keep-alive."""
