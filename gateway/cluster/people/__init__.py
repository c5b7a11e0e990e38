"""The gateway's door for people, on its own port: who they are and what they may (users.py: TokenReview and
SubjectAccessReview), the execute API over their AgentSessions (sessions.py), the MCP front door (front_door.py), and
the two as one server (server.py). Cluster mode only: all of it speaks to the Kubernetes API."""
