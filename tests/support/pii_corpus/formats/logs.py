"""Log formats: web access logs, application logs, syslog, stack traces. Dense in look-alikes (timestamps, byte
counts, durations, request ids, versions) around a few addresses and emails per line."""

from __future__ import annotations

import random

from tests.support.pii_corpus import lookalikes as la
from tests.support.pii_corpus import values
from tests.support.pii_corpus.formats.common import phone_of
from tests.support.pii_corpus.locales import Person, person
from tests.support.pii_corpus.model import Segment, Slot, Writer, fill


def _slots(r: random.Random, who: Person) -> dict[str, Slot]:
    """What log templates' slots hold, drawn when written (each occurrence of a slot draws its own)."""
    return {
        "email": lambda: values.email(r, who),
        "phone": lambda: phone_of(r, who),
        "e164": lambda: phone_of(r, who, "e164", "international"),
        "sms": lambda: values.card_like_phone(r) if r.random() < 0.5 else phone_of(r, who, "e164"),
        "card": lambda: values.card(r),
        "ssn": lambda: values.us_ssn(r),
        "iban": lambda: values.iban_value(r),
        "ip": lambda: values.ip(r),
        "ip4": lambda: values.ip(r, "v4"),
        "host_port": lambda: _host_port(r),
        "uuid": lambda: la.uuid_text(r),
        "ref": lambda: la.order_ref(r),
        "order": lambda: la.year_sequence_id(r),
        "customer": lambda: la.customer_id(r),
        "amount": lambda: la.price(r),
        "epoch": lambda: la.epoch(r),
        "epoch_s": lambda: la.epoch(r, millis=False),
        "span": lambda: la.hex_id(r, 16),
        "hex32": lambda: la.hex_id(r, 32),
        "queue_id": lambda: la.hex_id(r, 10, upper=True),
        "bad_ssn": lambda: la.invalid_ssn(r),
        "bad_iban": lambda: la.invalid_iban(r),
        "loyalty": lambda: la.luhn_no_iin(r),
        "ean": lambda: la.ean13(r),
        "isbn": lambda: la.isbn13(r),
        "imei": lambda: la.imei(r),
        "semver": lambda: la.semver(r),
        "tracking": lambda: la.tracking_number(r),
        "port": lambda: la.port(r),
        "took": lambda: la.duration(r),
        "bytes": lambda: la.byte_count(r),
        "when": lambda: la.timestamp(r, "iso-offset"),
        "sql_time": lambda: la.timestamp(r, "sql"),
        "version4": lambda: la.version_quad(r),
        "build": lambda: la.git_sha(r, short=True),
        "date": lambda: la.date(r, "iso"),
        "time": lambda: la.time_of_day(r),
        "mac": lambda: la.mac_address(r),
        "hex_address": lambda: la.hex_address(r),
        "mx": lambda: r.choice(who.locale.mail_domains),
        "pid": lambda: str(r.randint(300, 65000)),
        "small": lambda: str(r.randint(10, 99)),
    }


def _host_port(r: random.Random) -> list[Segment]:
    """An address and port: an IPv6 address in brackets, or its last group would read as the port."""
    address = values.ip(r)
    port = la.port(r)
    return ["[", address, "]:", port] if ":" in address.text else [address, ":", port]


def _user_agent(r: random.Random) -> list[Segment]:
    return r.choice(
        [
            ["Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/",
             la.build_number(r), " Safari/537.36"],
            ["Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Version/", la.version(r),
             " Mobile/15E148"],
            ["curl/", la.version(r)],
            ["python-requests/", la.version(r)],
        ]
    )  # fmt: skip


def _request_path(r: random.Random) -> list[Segment]:
    path = r.choice(("/api/v2/orders", "/account/settings", "/static/img/", "/login", "/api/v1/users", "/cart"))
    if path == "/static/img/":
        return [path, la.retina_asset(r)]
    if path == "/api/v1/users" and r.random() < 0.7:
        return [path, "?email=", values.email(r, person(r), "url-encoded"), f"&page={r.randint(1, 9)}"]
    if path == "/api/v2/orders":
        return [path, "/", la.year_sequence_id(r)]
    return [path]


_ACCESS = '{client} - - [{clf}] "{method} {path} HTTP/1.1" {status} {bytes} "-" "{agent}" rt={took}\n'


def access_log(r: random.Random, w: Writer) -> None:
    for _ in range(r.randint(12, 30)):
        line: dict[str, Slot] = {
            "client": values.ip(r, r.choice(["v4", "v4", "v4", "v6", "v6-mapped"])), "clf": la.timestamp(r, "clf"),
            "method": r.choice(["GET", "GET", "POST"]), "path": _request_path(r),
            "status": r.choice(["200", "200", "304", "404", "502"]), "bytes": la.byte_count(r),
            "agent": _user_agent(r), "took": la.duration(r),
        }  # fmt: skip
        w.add(fill(_ACCESS, line))


# About half carry PII, the rest only counters, ids and versions.
_APP_EVENTS = (
    "login ok user={email} ip={ip} took={took}",
    "sms sent to={sms} provider_msg_id={uuid}",
    "payment declined card={card} ref={ref} amount={amount}",
    '{"msg": "profile updated", "email": "{email}", "phone": "{phone}", "ts": {epoch}, "span_id": "{span}"}',
    "kyc check passed ssn={ssn} account={customer} score=0.{small}",
    "kyc check rejected: ssn={bad_ssn} was never issued, account={customer}",
    "refund queued iban={iban} order={order} batch={customer}",
    "refund rejected: checksum failed iban={bad_iban} order={order}",
    "loyalty points credited ref={loyalty} ean={ean}",
    "device registered imei={imei} app={semver} push_token={hex32}",
    "label created tracking={tracking} isbn={isbn} weight_g={small}0",
    "upstream timeout host={ip4}:{port} after {took} bytes_in={bytes}",
    "cache stats hits={bytes} evicted_bytes={bytes} oldest={epoch}",
    "gc pause {took} heap_bytes={bytes} since {when}",
    "starting version {version4} build {build} on port {port}",
    "job {uuid} finished in {took} rows={customer} next run {date} {time}",
)


def app_log(r: random.Random, w: Writer) -> None:
    service = r.choice(["billing-api", "auth", "notifier", "checkout"])
    for _ in range(r.randint(14, 30)):
        level = r.choice(["INFO ", "WARN ", "ERROR", "DEBUG"])
        event = fill(r.choice(_APP_EVENTS), _slots(r, person(r)))
        w.add(la.timestamp(r), f" {level} [{service}] [req=", la.hex_id(r, 16), "] ", event, "\n")


# Roughly what a mail, DHCP, firewall and VoIP host log beside cron and systemd.
_SYSLOG = (
    "sshd[{pid}]: Accepted publickey for deploy from {ip} port {port} ssh2: ED25519 SHA256:{hex32}",
    "postfix/smtp[{pid}]: {queue_id}: to=<{email}>, relay=mx.{mx}[{ip4}]:25, delay={took}, status=sent "
    "(250 2.0.0 OK {epoch_s})",
    "dhcpd[812]: DHCPACK on {ip4} to {mac} via eth0 (lease {took})",
    "kernel: [{took}] IN=eth0 OUT= SRC={ip} DST={ip4} LEN=60 PROTO=TCP SPT={port} DPT={port}",
    "asterisk[2211]: Call from {e164} to {sms} duration {took} uniqueid {epoch}",
    "CRON[{pid}]: (root) CMD (run-parts /etc/cron.hourly) took {took}",
    "systemd[1]: Started session {customer} of user deploy; memory peak {bytes} B, cpu {took}",
)


def syslog(r: random.Random, w: Writer) -> None:
    host = r.choice(["web-01", "mail-02", "gw-fra1", "db-3"])
    for _ in range(r.randint(14, 30)):
        w.add(la.timestamp(r, "syslog"), f" {host} ", fill(r.choice(_SYSLOG), _slots(r, person(r))), "\n")


_JAVA_TRACE = """{sql_time} ERROR [http-nio-8080-exec-{small}] PaymentService - com.example.billing.PaymentException: \
card {card} declined for {email} (order {order}, trace {hex32})
\tat com.example.billing.PaymentService.charge(PaymentService.java:{small}1)
\tat com.example.billing.CheckoutController.submit(CheckoutController.java:{small}7)
\tat org.springframework.web.servlet.DispatcherServlet.doService(DispatcherServlet.java:{small}4)
Caused by: java.net.SocketTimeoutException: connect timed out to {host_port} after {took}
\t... {small} more
Suppressed: com.example.tax.W2Exception: no W-2 on file for SSN {ssn} (employee {customer})

"""
_PYTHON_TRACE = """Traceback (most recent call last):
  File "/srv/app/billing/handle.py", line {small}, in handle
    return send_invoice(record)
  File "/srv/app/billing/send_invoice.py", line {small}, in send_invoice
    account = validate_iban(record.iban)
  File "/srv/app/billing/validate_iban.py", line {small}, in validate_iban
    raise InvalidAccount(iban, record)
billing.errors.InvalidAccount: IBAN {bad_iban} rejected for customer {email} phone {e164} at {hex_address}
  while retrying with {iban} from {ip} (attempt id {uuid})

"""


def stack_trace(r: random.Random, w: Writer) -> None:
    for _ in range(r.randint(2, 4)):
        w.add(fill(r.choice([_JAVA_TRACE, _PYTHON_TRACE]), _slots(r, person(r))))
