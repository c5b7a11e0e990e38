"""What runs inside the sandbox: the tool API for agent code, the executor, skills, the agent loop.

Standard library only: it runs under the sandbox image's plain python3 (docs/contracts.md).
"""
