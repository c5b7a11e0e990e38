"""Local mode: the gateway in-process for `mcpexec run`, with its own per-task tokens."""
