"""The mcpexec gateway: the only door from a sandbox to MCP tools and models.

`gateway.local.LocalGateway` runs it in-process for `mcpexec run`; `python -m gateway` runs it as a server.
"""
