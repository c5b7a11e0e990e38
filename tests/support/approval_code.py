"""Agent code the approval tests run against the demo server (named `server`: `demo` locally, `crm` in a cluster):
one message to a customer, and a campaign to every customer on the team plan (a plan's realistic workflow)."""

from __future__ import annotations

# The address of customer C002 (the one `sends` writes to), as the tool really receives it.
RAW_EMAIL = "bob.okafor@example.net"


def sends(server: str) -> str:
    """Reads C002, sends them a message; prints `sent sent`, or `denied: <the person's reason>`."""
    return f"""
c = call_tool("{server}/get_customer", {{"customer_id": "C002"}})
try:
    receipt = call_tool("{server}/send_message", {{"to": c["email"], "subject": "renewal", "body": "hi"}})
    print("sent", receipt["status"])
except ApprovalDenied as exc:
    print("denied:", exc.reason)
"""


def campaign(server: str) -> str:
    """Emails every customer on the team plan (C002, C003); prints each id and `sent` (or `planned`: a dry run)."""
    return f"""
for customer in call_tool("{server}/list_customers", {{"plan": "team"}})["customers"]:
    email = call_tool("{server}/get_customer", {{"customer_id": customer["id"]}})["email"]
    receipt = call_tool("{server}/send_message", {{"to": email, "subject": "Team plan", "body": "Your renewal"}})
    print(customer["id"], "planned" if isinstance(receipt, Planned) else receipt["status"])
"""
