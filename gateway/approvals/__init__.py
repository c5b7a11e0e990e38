"""Human approval of tool calls (docs/approvals.md): which calls need it (rules), a held call's digest and what
people are shown of it (held_calls), the held calls' shared state in Redis (redis_holds), and the gate the call path
asks (gate)."""
