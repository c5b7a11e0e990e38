"""Record formats: what database and CRM tools return (JSON rows, a raw JSON-RPC result, CSV, SQL, LDIF, vCard,
form posts)."""

from __future__ import annotations

import random
from collections.abc import Callable

from tests.support.pii_corpus import lookalikes as la
from tests.support.pii_corpus import values
from tests.support.pii_corpus.formats.common import csv_cell, iban_of, jfield, phone_of
from tests.support.pii_corpus.locales import person
from tests.support.pii_corpus.model import Segment, Slot, Writer, fill, json_escaped


def _customer(r: random.Random) -> list[Segment]:
    who = person(r, "US" if r.random() < 0.3 else None)
    country = who.locale.country
    out: list[Segment] = ["  {\n"]
    out += jfield("id", la.hex_id(r, 24))
    out += jfield("customer_no", la.customer_id(r), quoted=False)
    out += jfield("name", who.name)
    out += jfield("email", values.email(r, who, r.choice(["plain", "plain", "plus-tag", "uppercase"])))
    out += jfield("phone", phone_of(r, who, "e164", "international", "national", "compact"))
    out += jfield("country", country)
    out += jfield("postal_code", la.postal_code(r, country))
    if country == "US":
        ssn_form = r.choice(["dashed", "compact", "compact", "spaced"])
        out += jfield("ssn", values.us_ssn(r, ssn_form).within("ssn-key" if ssn_form == "compact" else ""))
    else:
        out += jfield("iban", iban_of(r, who))
    out += jfield("last_login_ip", values.ip(r))
    out += jfield("created_at", la.timestamp(r))
    out += ['    "orders": ["', la.year_sequence_id(r), '", "', la.order_ref(r), '"],\n']
    out += jfield("updated_ms", la.epoch(r, millis=True), last=True, quoted=False)
    return [*out, "  }"]


def _payment(r: random.Random) -> list[Segment]:
    who = person(r)
    out: list[Segment] = ["  {\n"]
    out += jfield("payment_id", ["pay_", la.hex_id(r, 24)])
    out += jfield("card_number", values.card(r))
    out += jfield("card_display", la.masked_card(r))
    out += jfield("billing_email", values.email(r, who))
    out += jfield("amount", la.price(r, who.locale.language))
    out += jfield("client_ip", values.ip(r))
    out += jfield("created", la.epoch(r, millis=True))
    out += jfield("idempotency_key", la.uuid_text(r))
    out += jfield("loyalty_ref", la.luhn_no_iin(r) if r.random() < 0.5 else la.ean13(r))
    out += jfield("previous_attempt_card", la.luhn_invalid_card(r), last=True)
    return [*out, "  }"]


def _employee(r: random.Random) -> list[Segment]:
    who = person(r, "US")
    out: list[Segment] = ["  {\n"]
    out += jfield("employee_id", la.customer_id(r))
    out += jfield("full_name", who.name)
    ssn_form = r.choice(["dashed", "compact", "spaced"])
    out += jfield("ssn", values.us_ssn(r, ssn_form).within("ssn-key" if ssn_form == "compact" else ""))
    out += jfield("work_email", values.email(r, who, domain="northwind.com"))
    out += jfield("mobile", phone_of(r, who))
    out += jfield("badge_no", la.nine_digit_id(r))
    out += jfield("device_imei", la.imei(r))
    out += jfield("hired", la.date(r, "iso"))
    out += jfield("payroll_iban", values.iban_value(r), last=True)
    return [*out, "  }"]


def _cloud_event(r: random.Random) -> list[Segment]:
    account = la.aws_account_id(r)
    out: list[Segment] = ["  {\n"]
    out += jfield("eventTime", la.timestamp(r))
    out += jfield("eventID", la.uuid_text(r))
    out += jfield("sourceIPAddress", values.ip(r))
    out += jfield("recipientAccountId", account)
    out += ['    "userArn": "arn:aws:iam::', la.aws_account_id(r), f':user/{person(r).ascii_first}",\n']
    out += jfield("bytesTransferredOut", la.byte_count(r), quoted=False)
    out += jfield("userAgent", ["aws-cli/", la.version(r), " Python/3.11.6"])
    out += jfield("tlsSessionTicketAge", la.duration(r), last=True)
    return [*out, "  }"]


def _shipment(r: random.Random) -> list[Segment]:
    who = person(r)
    out: list[Segment] = ["  {\n"]
    out += jfield("tracking", la.tracking_number(r))
    out += jfield("recipient", who.name)
    out += jfield("recipient_phone", phone_of(r, who))
    out += jfield("recipient_email", values.email(r, who))
    out += jfield("item_ean", la.ean13(r))
    out += jfield("item_isbn", la.isbn13(r))
    out += jfield("shipped", la.date(r, "iso"), last=True)
    return [*out, "  }"]


def json_rows(r: random.Random, w: Writer) -> None:
    row = r.choice([_customer, _customer, _payment, _payment, _employee, _employee, _cloud_event, _shipment])
    rows = [row(r) for _ in range(r.randint(6, 16))]
    w.add("[\n")
    for i, segments in enumerate(rows):
        w.add(segments, ",\n" if i < len(rows) - 1 else "\n")
    w.add("]\n")


_TICKET = """Ticket {ticket} ({date})
Contact:
{email}
Phone:\t{phone}\t{order}
Alt:\t{alt}, {order2}
Card on file: {card}
Last IP: {ip}
{"customer": {"email": "{nested}", "ref": "{ref}"}}
"""


def json_tool_result(r: random.Random, w: Writer) -> None:
    """A JSON-RPC result as raw text: the tool's text is a JSON string, so its newlines and tabs are escapes and a
    value right after one starts after the escape's letter (`\\nana@x.com`: the address is `ana@x.com`)."""
    lines: list[Segment] = []
    for _ in range(r.randint(3, 7)):
        who = person(r)
        alt = values.card_like_phone(r) if r.random() < 0.4 else values.phone(r, who.locale.country, "e164")
        ticket: dict[str, Slot] = {
            "ticket": la.year_sequence_id(r), "date": la.timestamp(r, "sql"),
            "email": values.email(r, who).within("after-json-escape"),
            "phone": phone_of(r, who, "international", "e164", "national").within("before-order-number"),
            "order": la.order_hash(r), "alt": alt if alt.context else alt.within("before-order-number"),
            "order2": la.order_hash(r), "card": la.masked_card(r) if r.random() < 0.5 else values.card(r),
            "ip": values.ip(r), "nested": values.email(r, person(r)), "ref": la.uuid_text(r),
        }  # fmt: skip
        lines += fill(_TICKET, ticket)
    w.add(f'{{"jsonrpc": "2.0", "id": {r.randint(1, 900)}, "result": {{"content": [{{"type": "text", "text": "')
    w.add(json_escaped(lines), '"}], "isError": false}}\n')


_CSV_COLUMNS = (
    "id", "name", "email", "phone", "last_order_no", "postal_code", "{account}", "member_no", "plan", "signup",
    "last_order", "order_ref", "updated", "balance",
)  # fmt: skip


def csv_export(r: random.Random, w: Writer) -> None:
    """A customer export: comma-separated (US style), semicolons (European, decimal commas) or tabs (a spreadsheet's
    copy). The phone column is followed by the last order's number (`+1 713 396 7854,#123456`: no extension)."""
    sep = r.choice([",", ";", "\t"])
    european = sep == ";" or (sep == "\t" and r.random() < 0.5)
    country = r.choice(["DE", "FR", "ES", "IT", "NL", "AT", "BE"] if european else ["US", "GB", "CA", "AU", "IN"])
    w.add(sep.join(_CSV_COLUMNS).replace("{account}", "iban" if european else "ssn") + "\n")
    for _ in range(r.randint(15, 35)):
        who = person(r, country if r.random() < 0.8 else None)
        if european:
            account: Segment = iban_of(r, who)
        elif who.locale.country == "US":
            account = values.us_ssn(r)
        else:
            account = ""  # no SSN outside the US
        cells: list[list[Segment]] = [
            [la.customer_id(r)],
            [who.name],
            [values.email(r, who)],
            csv_cell(phone_of(r, who).within("before-order-number"), sep),
            [la.order_hash(r)],
            csv_cell(la.postal_code(r, who.locale.country), sep),
            csv_cell(account, sep),
            [la.nine_digit_id(r)],
            [r.choice(["free", "pro", "business"])],
            [la.date(r, "de" if european else "us")],
            [la.year_sequence_id(r)],
            [la.order_ref(r)],
            [la.epoch(r)],
            csv_cell(la.price(r, who.locale.language), sep),
        ]
        for i, cell in enumerate(cells):
            w.add(cell, sep if i < len(cells) - 1 else "\n")


def _contact_row(r: random.Random) -> list[Segment]:
    who = person(r, "US" if r.random() < 0.3 else None)
    row: dict[str, Slot] = {
        "id": la.order_ref(r), "email": values.email(r, who), "phone": phone_of(r, who),
        "tax": values.us_ssn(r) if who.locale.country == "US" else la.vat_id(r), "iban": iban_of(r, who),
        "ip": values.ip(r), "created": la.timestamp(r, "sql"),
    }  # fmt: skip
    return fill("({id}, '{email}', '{phone}', '{tax}', '{iban}', '{ip}', '{created}+00')", row)


def _payment_row(r: random.Random) -> list[Segment]:
    row: dict[str, Slot] = {
        "id": la.order_ref(r), "card": values.card(r), "masked": la.masked_card(r), "email": values.email(r, person(r)),
        "amount": la.price(r, "plain"), "created": la.timestamp(r, "sql"),
    }  # fmt: skip
    return fill("({id}, '{card}', '{masked}', '{email}', {amount}, '{created}+00')", row)


def _order_row(r: random.Random) -> list[Segment]:
    row: dict[str, Slot] = {
        "id": la.order_ref(r), "ref": la.year_sequence_id(r), "cents": la.byte_count(r), "placed": la.epoch(r),
    }  # fmt: skip
    return fill("({id}, '{ref}', {cents}, {placed})", row)


_TABLES = {
    "contacts": ("email text, phone text, tax_id text, iban text, ip inet", "email, phone, tax_id, iban, ip",
                 _contact_row),
    "payments": ("card_number text, card_display text, email text, amount numeric",
                 "card_number, card_display, email, amount", _payment_row),
}  # fmt: skip


def _insert(
    r: random.Random, w: Writer, table: str, columns: str, row: Callable[[random.Random], list[Segment]]
) -> None:
    w.add(f"INSERT INTO public.{table} ({columns}) VALUES\n")
    count = r.randint(8, 20)
    for i in range(count):
        w.add(row(r), ",\n" if i < count - 1 else ";\n")


def sql_dump(r: random.Random, w: Writer) -> None:
    """A pg_dump: a table of people's data, then one of orders (references, amounts, times: no PII)."""
    table = r.choice(list(_TABLES))
    columns, names, row = _TABLES[table]
    w.add("-- PostgreSQL database dump\n-- Dumped by pg_dump version ", la.version(r), "\n\n")
    w.add(f"CREATE TABLE public.{table} (id bigint NOT NULL, {columns}, created_at timestamp with time zone);\n\n")
    _insert(r, w, table, f"id, {names}, created_at", row)
    w.add("\nCREATE TABLE public.orders (id bigint NOT NULL, ref text, total_cents bigint, placed_at bigint);\n")
    _insert(r, w, "orders", "id, ref, total_cents, placed_at", _order_row)
    w.add(f"\nSELECT pg_catalog.setval('public.{table}_id_seq', ", la.order_ref(r), ", true);\n")
    w.add(f"CREATE INDEX {table}_created_idx ON public.{table} USING btree (created_at);\n")


_LDIF_ENTRY = """dn: uid={uid},ou=people,dc=example,dc=com
objectClass: inetOrgPerson
cn: {name}
mail: {email}
telephoneNumber: {phone}
mobile: {mobile}
uidNumber: {uid_number}
ipHostNumber: {ip}
lastLogon: {last_logon}
pwdLastSet: {pwd_set}
whenCreated: {created}
objectGUID:: {guid}
supportedControl: {oid}

"""


def ldif(r: random.Random, w: Writer) -> None:
    office = r.choice(values.PHONE_COUNTRIES)  # a directory is mostly one office's people
    w.add("version: 1\n\n")
    for _ in range(r.randint(4, 9)):
        who = person(r, office if r.random() < 0.7 else None)
        entry: dict[str, Slot] = {
            "uid": who.ascii_first[0] + who.ascii_last.replace("'", ""), "name": who.name,
            "email": values.email(r, who), "phone": phone_of(r, who, "international", "e164"),
            "mobile": phone_of(r, who),
            "uid_number": la.customer_id(r), "ip": values.ip(r), "last_logon": la.ldap_timestamp(r),
            "pwd_set": la.ldap_timestamp(r), "created": la.timestamp(r, "ldap"), "guid": la.uuid_text(r),
            "oid": la.oid(r),
        }  # fmt: skip
        w.add(fill(_LDIF_ENTRY, entry))


_VCARD = """BEGIN:VCARD
VERSION:3.0
FN:{name}
N:{last};{first};;;
TEL;TYPE=CELL:{cell}
TEL;TYPE=WORK,VOICE:{work}
EMAIL;TYPE=INTERNET:{email}
ADR;TYPE=HOME:;;;{city};;{postal};{country}
REV:{rev}
UID:urn:uuid:{uuid}
END:VCARD
"""


def vcard(r: random.Random, w: Writer) -> None:
    home = r.choice(values.PHONE_COUNTRIES)  # an address book is mostly one country's people
    for _ in range(r.randint(4, 9)):
        who = person(r, home if r.random() < 0.7 else None)
        country = who.locale.country
        card: dict[str, Slot] = {
            "name": who.name, "last": who.last, "first": who.first,
            "cell": phone_of(r, who, *values.phone_forms(country), "compact"),
            "work": phone_of(r, who, "international", "national"), "email": values.email(r, who),
            "city": r.choice(who.locale.cities), "postal": la.postal_code(r, country), "country": country,
            "rev": la.timestamp(r), "uuid": la.uuid_text(r),
        }  # fmt: skip
        w.add(fill(_VCARD, card))


def _checkout(r: random.Random) -> list[Segment]:
    who = person(r)
    return fill(
        "email={email}&tel={tel}&cc-number={card}&cc-exp={month}%2F{year}&csrf={csrf}&country={cc}",
        {
            "email": values.email(r, who, "url-encoded"),
            "tel": phone_of(r, who, "url-encoded"),
            "card": values.card(r, "url-encoded"),
            "month": f"{r.randint(1, 12):02d}",
            "year": str(r.randint(26, 31)),
            "csrf": la.hex_id(r, 32),
            "cc": who.locale.country,
        },
    )


def _credit_application(r: random.Random) -> list[Segment]:
    who = person(r, "US")
    return fill(
        "first={first}&last={last}&email={email}&phone={tel}&ssn={ssn}&dob={dob}&zip={zip}&income={income}&ref={ref}",
        {
            "first": who.first,
            "last": who.last,
            "email": values.email(r, who, "url-encoded"),
            "tel": phone_of(r, who, "url-encoded"),
            "ssn": values.us_ssn(r, r.choice(["dashed", "compact"])),
            "dob": la.date(r, "iso"),
            "zip": la.zip_plus4(r),
            "income": str(r.randint(20, 400) * 1000),
            "ref": la.order_ref(r),
        },
    )


_POST = """POST {path} HTTP/1.1
Host: shop.example.com
Content-Type: application/x-www-form-urlencoded
Content-Length: {length}
X-Forwarded-For: {client}, {proxy}
X-Request-Id: {request}
Cookie: sid={session}

{body}

"""


def form_post(r: random.Random, w: Writer) -> None:
    """HTTP form posts: values form-encoded as the browser sent them (`%40`, `%2B`, spaces as `+`)."""
    for _ in range(r.randint(3, 6)):
        path, form = r.choice([("/checkout", _checkout), ("/apply", _credit_application)])
        body = form(r)
        request: dict[str, Slot] = {
            "path": path, "length": str(sum(len(s if isinstance(s, str) else s.text) for s in body)),
            "client": values.ip(r, "v4"), "proxy": values.ip(r, "v4"), "request": la.uuid_text(r),
            "session": la.hex_id(r, 32), "body": body,
        }  # fmt: skip
        w.add(fill(_POST, request))
        if r.random() < 0.5:
            who = person(r, r.choice(["US", "GB", "DE", "FR"]))
            confirm: dict[str, Slot] = {"user": values.email(r, who, "url-encoded"), "t": la.epoch(r, millis=False)}
            w.add(fill("GET /newsletter/confirm?user={user}&t={t} HTTP/1.1\n\n", confirm))
