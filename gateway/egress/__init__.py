"""Controlled egress: the forward proxy a sandbox reaches public hosts through (docs/egress.md).

- `proxy`      the server: one sandbox connection, its token, its grant, then a TLS tunnel or one plain-HTTP request
- `plain_http` an http:// request forwarded, its text answer tokenized like a tool result
- `http_head`  request and response heads, chunked bodies (the little HTTP/1.1 a proxy must read)
- `tls_hello`  the server name of a TLS ClientHello (a tunnel's host must be its SNI)
- `addresses`  the gateway's own DNS resolution and the addresses no name may lead to
- `budgets`    per-task connection and byte budgets (Redis in a cluster, memory locally)
- `accounting` every connection's audit record and metrics
- `settings`   the admin's configuration (MCPEXEC_EGRESS_* environment variables)
"""
