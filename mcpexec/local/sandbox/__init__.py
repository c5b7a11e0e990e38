"""Local sandboxes for `mcpexec run`: gVisor (runsc), or a plain process only when explicitly unsafe."""
