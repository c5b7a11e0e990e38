"""mcpexec: code execution with MCP on Kubernetes (shared models, CLI, local mode)."""
