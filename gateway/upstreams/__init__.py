"""Connections to upstream MCP servers: their pool, the bounded stdio transport, HTTP answer limits and keep-alive."""
