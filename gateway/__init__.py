"""The mcpexec gateway: the only door from a sandbox to MCP tools and models.

`python -m gateway` serves it in a cluster (gateway/cluster/serve.py); `gateway.local.in_process.LocalGateway`
runs it in-process for `mcpexec run`. The package map, from the entry points down (make lint checks that a
module only imports from its own layer or below, see .importlinter):

- `cluster/`   cluster mode: TokenReview auth of sandboxes, the SandboxPool claim index, MCPServer resources and their
               status, the tasks' result reports (`status.report`), held calls' status and Events, serve();
               `cluster/people/`, the door for people on a port of its own: who they are and what they may
               (TokenReview, SubjectAccessReview), the execute API over their AgentSessions, the approval API, the MCP
               front door
- `local/`     local mode: the in-process gateway on a Unix socket and its per-task tokens
- `web/`       the v1 HTTP API (docs/contracts.md): app (its routers, one per area, in `routes/`), bearer auth, error
               bodies, lean tool-call route, body limit, answers counted by route and status, serving; the MCP front
               door (execute_code) over the session broker (it asks for held calls' approval by elicitation, either
               protocol era: mcp_approval_asking), the MCP-session registry both HTTP front doors share, and the held
               calls shown as they happen (approval_watch)
- `core`       one gateway instance wired together from its backends and config; the HTTP app and LocalGateway are
               thin shells over it
- `tools/`     tools as a task sees them: catalog (progressive disclosure), calls, policy, wrapper source
- `approvals/` calls held for a person's approval: who asks (rules), the call's digest and tokenized preview, plans,
               the held calls' store (in Redis, or in this process) and its log of changes, the gate the call path asks
               and people answer through
- `llm/`       the LLM proxy: OpenAI chat completions in, OpenAI or Anthropic upstream, streamed answers out
- `executions/` interactive sessions: the broker between a caller's code and its session sandbox's runtime
- `upstreams/` connections to upstream MCP servers: pool, bounded stdio transport, HTTP answer limits, keep-alive
- `pii/`       detection, tokenization and the vault
- `egress/`    the sandboxes' forward proxy to public hosts (docs/egress.md): grants, DNS and address guards, budgets,
               audit; listeners of its own, off the tool-call path
- `ratelimit`, `usage`, `telemetry/` (metrics, audit, logs), `settings`
- `context` (the authenticated caller), `errors` (the error contract)

"Session" means an interactive session (an AgentSession, or a sandbox of `mcpexec serve`) and nothing else; an
MCP session is the protocol's (`Mcp-Session-Id`), always called so.
"""
