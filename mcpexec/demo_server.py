"""A demo MCP server holding fake customer records full of PII (emails, phones, IBANs, cards, SSNs, IPs).

It exists to show and test the gateway's tokenization: reads return real values, which the gateway must
tokenize; `send_message` records what it received (in memory, and as JSON lines in `$DEMO_OUTBOX` when set)
so a test can check that the tool got the real address back. Served over HTTP, it logs one JSON line per tool call
with the trace context the call came with (`params._meta.traceparent`, and the `traceparent` header), never its
arguments: what a traced MCP server shows, and what the e2e test reads from its pod's log. All data is fictional.

Run: `python -m mcpexec.demo_server` (stdio) or `python -m mcpexec.demo_server --http PORT [--host ADDRESS]`
(streamable HTTP, on loopback unless told otherwise, e.g. `--host 0.0.0.0` in a pod).
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from gateway.telemetry.logs import JsonLines

log = logging.getLogger("mcpexec.demo_server")
log.propagate = False  # only `main`'s HTTP handler: not the SDK's root handler, nor over stdio (the gateway's stderr)


class Customer(BaseModel):
    id: str
    name: str
    email: str
    phone: str
    iban: str
    card: str
    ssn: str
    last_login_ip: str
    city: str
    plan: str
    notes: str


class CustomerSummary(BaseModel):
    id: str
    name: str
    plan: str
    city: str


class CustomerList(BaseModel):
    customers: list[CustomerSummary]


class SentMessage(BaseModel):
    to: str
    subject: str
    body: str


class SendReceipt(BaseModel):
    status: str
    message_number: int
    to: str


CUSTOMERS: dict[str, Customer] = {
    c.id: c
    for c in [
        Customer(
            id="C001",
            name="Alice Martin",
            email="alice.martin@example.com",
            phone="+1 202-555-0143",
            iban="DE89370400440532013000",
            card="4111 1111 1111 1111",
            ssn="123-45-6789",
            last_login_ip="203.0.113.17",
            city="Boston",
            plan="enterprise",
            notes="Prefers email. Backup contact: a.martin@example.org.",
        ),
        Customer(
            id="C002",
            name="Bob Okafor",
            email="bob.okafor@example.net",
            phone="(415) 555-0199",
            iban="GB82WEST12345698765432",
            card="5500 0055 5555 5559",
            ssn="536-90-4399",
            last_login_ip="2001:db8::42",
            city="San Francisco",
            plan="team",
            notes="Call before 5pm on +1 415-555-0100.",
        ),
        Customer(
            id="C003",
            name="Chloé Dubois",
            email="chloe.dubois@example.fr",
            phone="+33 1 42 68 53 00",
            iban="FR1420041010050500013M02606",
            card="3782 822463 10005",
            ssn="661-23-4567",
            last_login_ip="198.51.100.7",
            city="Paris",
            plan="team",
            notes="Invoices to billing@dubois.example.fr.",
        ),
        Customer(
            id="C004",
            name="Daan de Vries",
            email="daan@example.nl",
            phone="+31 20 624 1111",
            iban="NL91ABNA0417164300",
            card="6011 1111 1111 1117",
            ssn="212-34-5678",
            last_login_ip="192.0.2.55",
            city="Amsterdam",
            plan="starter",
            notes="Churn risk; renewal in March.",
        ),
    ]
}

server = MCPServer(
    "mcpexec-demo-customers",
    instructions="Fake customer records (CRM demo) and an outbox for messages to customers.",
)
outbox: list[SentMessage] = []


def _log_call(ctx: Context, tool: str) -> None:
    """The call's trace context as it arrived (a JSON log line once `main` set logging up for HTTP)."""
    headers = getattr(ctx.request_context.request, "headers", None)
    log.info(
        "tool call",
        extra={
            "tool": tool,
            "meta_traceparent": (ctx.request_context.meta or {}).get("traceparent"),
            "header_traceparent": None if headers is None else headers.get("traceparent"),
        },
    )


def _summary(c: Customer) -> CustomerSummary:
    return CustomerSummary(id=c.id, name=c.name, plan=c.plan, city=c.city)


@server.tool()
def list_customers(
    ctx: Context,
    plan: Annotated[str | None, Field(description="Only customers on this plan")] = None,
) -> CustomerList:
    """List customers (id, name, plan, city), optionally only those on one plan."""
    _log_call(ctx, "list_customers")
    return CustomerList(customers=[_summary(c) for c in CUSTOMERS.values() if plan in (None, c.plan)])


@server.tool()
def get_customer(
    customer_id: Annotated[str, Field(description="Customer id, e.g. C001", pattern=r"^C\d{3}$")],
    ctx: Context,
) -> Customer:
    """Full customer record including contact and payment details."""
    _log_call(ctx, "get_customer")
    if customer_id not in CUSTOMERS:
        raise ToolError(f"no customer {customer_id}")
    return CUSTOMERS[customer_id]


@server.tool()
def search_customers(
    query: Annotated[str, Field(description="Case-insensitive text matched against every field", min_length=1)],
    ctx: Context,
) -> list[Customer]:
    """Customers any of whose fields contain the query."""
    _log_call(ctx, "search_customers")
    needle = query.lower()
    return [c for c in CUSTOMERS.values() if any(needle in str(v).lower() for v in c.model_dump().values())]


@server.tool()
def send_message(
    to: Annotated[str, Field(description="Recipient email address", pattern=r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")],
    subject: Annotated[str, Field(description="Subject line", max_length=200)],
    body: Annotated[str, Field(description="Plain-text body")],
    ctx: Context,
) -> SendReceipt:
    """Send an email to a customer (recorded in the demo outbox, never actually sent)."""
    _log_call(ctx, "send_message")
    message = SentMessage(to=to, subject=subject, body=body)
    outbox.append(message)
    path = os.environ.get("DEMO_OUTBOX")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(message.model_dump_json() + "\n")
    return SendReceipt(status="sent", message_number=len(outbox), to=to)


@server.tool()
def sent_messages(ctx: Context) -> list[SentMessage]:
    """Every message sent so far in this session."""
    _log_call(ctx, "sent_messages")
    return list(outbox)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    parser.add_argument("--host", default="127.0.0.1", help="the address to serve HTTP on (default: loopback)")
    parser.add_argument("--json-response", action="store_true", help="answer HTTP requests with JSON, not SSE")
    args = parser.parse_args()
    if args.http:
        handler = logging.StreamHandler()
        handler.setFormatter(JsonLines())  # the gateway's lines
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        server.run("streamable-http", host=args.host, port=args.http, json_response=args.json_response)
    else:
        server.run()


if __name__ == "__main__":
    main()
