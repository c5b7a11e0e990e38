"""Interactive sessions: code handed to a sandbox's runtime one execution at a time (broker.py)."""
