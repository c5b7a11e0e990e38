"""Cluster mode: TokenReview auth, MCPServer resources and their status, `python -m gateway`."""
