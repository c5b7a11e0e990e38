"""The mcpexec gateway: the only door from a sandbox to MCP tools and models.

`python -m gateway` serves it in a cluster (gateway/cluster/serve.py); `gateway.local.in_process.LocalGateway`
runs it in-process for `mcpexec run`. The package map, from the entry points down (make lint checks that a
module only imports from its own layer or below, see .importlinter):

- `cluster/`   cluster mode: TokenReview auth, the SandboxPool claim index, MCPServer resources and their status,
               serve()
- `local/`     local mode: the in-process gateway on a Unix socket and its per-task tokens
- `web/`       the v1 HTTP API (docs/contracts.md): app, bearer auth, pool sandbox assignments, lean tool-call route,
               body limit, serving; the MCP front door (execute_code) over the session broker
- `core`       one gateway instance wired together; the HTTP app and LocalGateway are thin shells over it
- `tools/`     tools as a task sees them: catalog (progressive disclosure), calls, policy, wrapper source
- `llm/`       the LLM proxy: OpenAI chat completions in, OpenAI or Anthropic upstream, streamed answers out
- `executions/` interactive sessions: the broker between a caller's code and its session sandbox's runtime
- `sessions/`  connections to MCP servers: pool, bounded stdio transport, HTTP answer limits, keep-alive
- `pii/`       detection, tokenization and the vault
- `ratelimit`, `usage`, `telemetry/` (metrics, audit, logs), `settings`
- `context` (the authenticated caller), `errors` (the error contract)
"""
