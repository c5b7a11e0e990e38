"""Developer formats: source code with test fixtures, git logs, npm listings, network device configuration."""

from __future__ import annotations

import random

from tests.support.pii_corpus import lookalikes as la
from tests.support.pii_corpus import values
from tests.support.pii_corpus.formats.common import phone_of
from tests.support.pii_corpus.locales import person
from tests.support.pii_corpus.model import Segment, Slot, Writer, fill

_PYTHON_HEAD = '''"""Fixtures for the billing tests."""

from dataclasses import dataclass

__version__ = "{version}"
BUILD = "{sha}"
TIMEOUT_MS = 30_000
ICON = "static/{icon}"

CUSTOMERS = [
'''
_PYTHON_ROW = '    {"id": "{id}", "email": "{email}", "phone": "{phone}", "iban": "{iban}", "card": "{card}"},\n'
_PYTHON_TESTS = """

@dataclass
class Contact:
    email: str
    phone: str


def test_masks_email() -> None:
    assert mask("{email}") == "***"


def test_rejects_bad_card() -> None:
    assert not valid_card("{bad_card}")
    assert not valid_card("{imei}")  # an IMEI


def test_retries_with_backoff(fake_clock) -> None:
    client = Client(timeout_ms=TIMEOUT_MS)
    client.fail_next(3)
    assert client.send(payload_of({size})) is not None
    assert fake_clock.slept == [0.5, 1.0, 2.0]
    assert client.last_request_id == "{request}"
"""
_JS_CONFIG = """// config/production.js
module.exports = {
  supportEmail: "{email}",
  oncallPhone: "{phone}",
  redis: { host: "{redis}", port: {port} },
  trustedProxies: ["{proxy1}", "{proxy2}"],
  logo: require("./assets/{logo}"),
  sentryRelease: "{release}",
  awsAccount: "{account}",
  cacheBytes: {bytes},
  featureFlagsEtag: "{etag}",
};

// Windows installer
// [assembly: AssemblyVersion("{assembly}")]

"""


def _python_module(r: random.Random, w: Writer) -> None:
    w.add(fill(_PYTHON_HEAD, {"version": la.version(r), "sha": la.git_sha(r), "icon": la.retina_asset(r)}))
    for _ in range(r.randint(2, 5)):
        who = person(r)
        row: dict[str, Slot] = {"id": la.uuid_text(r), "email": values.email(r, who), "phone": phone_of(r, who)}
        w.add(fill(_PYTHON_ROW, {**row, "iban": values.iban_value(r), "card": values.card(r)}))
    w.add("]\nALLOWED_IPS = [")
    for i in range(r.randint(2, 5)):
        w.add(", " if i else "", '"', values.ip(r), '"')
    tests: dict[str, Segment] = {
        "email": values.email(r, person(r)), "bad_card": la.luhn_invalid_card(r), "imei": la.imei(r),
        "size": la.byte_count(r), "request": la.uuid_text(r),
    }  # fmt: skip
    w.add("]\n", fill(_PYTHON_TESTS, tests))


def _js_config(r: random.Random, w: Writer) -> None:
    admin = person(r)
    slots: dict[str, Segment] = {
        "email": values.email(r, admin, domain="globex.io"), "phone": phone_of(r, admin, "international", "e164"),
        "redis": values.ip(r, "v4"), "port": la.port(r), "proxy1": values.ip(r), "proxy2": values.ip(r),
        "logo": la.retina_asset(r), "release": la.semver(r), "account": la.aws_account_id(r),
        "bytes": la.byte_count(r), "etag": la.hex_id(r), "assembly": la.version_quad(r),
    }  # fmt: skip
    w.add(fill(_JS_CONFIG, slots))


def source_code(r: random.Random, w: Writer) -> None:
    for _ in range(r.randint(1, 2)):
        r.choice([_python_module, _js_config])(r, w)


_COMMIT = """commit {sha}
Author: {author} <{email}>
Date:   {date}

    {kind}(billing): {subject} (#{pr})

    The previous behaviour dropped the event after {took}; now it is retried with backoff and
    the payload (up to {size} bytes) is kept. Build {build}.

{reviewed}    Signed-off-by: {author} <{email}>

"""


def git_log(r: random.Random, w: Writer) -> None:
    for _ in range(r.randint(5, 12)):
        author, reviewer = person(r), person(r)
        subject: list[Segment] = r.choice(
            [
                ["retry webhooks from ", values.ip(r), " after ", la.duration(r)],
                ["bump lodash to ", la.version(r)],
                ["redact ", la.masked_card(r), " in logs"],
                ["handle ", la.build_number(r), " user agents"],
            ]
        )
        reviewed: list[Segment] = [
            "    Reviewed-by: ",
            f"{reviewer.first} {reviewer.last} <",
            values.email(r, reviewer),
            ">\n",
        ]
        slots: dict[str, Segment | list[Segment]] = {
            "sha": la.git_sha(r), "author": f"{author.first} {author.last}", "email": values.email(r, author),
            "date": la.timestamp(r, "git"), "kind": r.choice(["fix", "feat", "chore"]), "subject": subject,
            "pr": str(r.randint(100, 9999)), "took": la.duration(r), "size": la.byte_count(r),
            "build": la.git_sha(r, short=True), "reviewed": reviewed if r.random() < 0.3 else [],
        }  # fmt: skip
        w.add(fill(_COMMIT, slots))
    w.add("$ git shortlog -sne\n")
    for _ in range(r.randint(3, 6)):
        who = person(r)
        w.add(f"{r.randint(1, 400):6d}\t{who.first} {who.last} <", values.email(r, who), ">\n")


_NPM_VIEW = """
$ npm view {package}

maintainers:
- {maintainer} <{maintainer_email}>
- {author} <{email}>

dist
.tarball: https://registry.npmjs.org/pkg/-/pkg.tgz
.shasum: {sha}
.unpackedSize: {size} B

published {date} by {author} <{email}>
"""


def npm_listing(r: random.Random, w: Writer) -> None:
    w.add("$ npm ls --depth=1\n", la.package_pin(r), " /srv/app\n")
    count = r.randint(6, 14)
    for i in range(count):
        nested, last = i % 4 == 3, i == count - 1
        w.add(("└─" if last else "├─") + ("┬ " if nested else "─ "), la.package_pin(r), "\n")
        if nested:
            w.add("  └── " if last else "│ └── ", la.package_pin(r), "\n")
    for _ in range(r.randint(1, 3)):
        maintainer, author = person(r), person(r)
        slots: dict[str, Segment] = {
            "package": la.package_pin(r), "maintainer": maintainer.ascii_first,
            "maintainer_email": values.email(r, maintainer), "author": author.ascii_first,
            "email": values.email(r, author), "sha": la.git_sha(r), "size": la.byte_count(r), "date": la.date(r, "iso"),
        }  # fmt: skip
        w.add(fill(_NPM_VIEW, slots))


_CISCO_HEAD = """hostname edge-{site}
!
service timestamps log datetime msec
no ip http server
ip domain-name corp.internal
aaa new-model
aaa authentication login default local
banner motd ^C Authorized access only ^C
!
"""
_CISCO_INTERFACE = """interface GigabitEthernet0/{port}
 description uplink to {peer}
 ip address {address} {mask}
 ipv6 address {v6}/64
 switchport access vlan {vlan}
 spanning-tree portfast
 speed 1000
 duplex full
 no shutdown
!
"""
_CISCO_TAIL = """ip route {network} {mask} {gateway}
access-list 101 permit tcp {source} {wildcard} any eq {port}
snmp-server contact {admin}, {phone}, {email}
snmp-server host {snmp} version 2c
ntp server {ntp}
!
! snmpwalk: {oid} = Timeticks: {uptime}
! {oid2} = Counter64: {octets}
! interface mac {mac}
! IOS XE Software, Version {version}
line vty 0 4
 exec-timeout 15 0
 transport input ssh
!
end
"""


def _cisco(r: random.Random, w: Writer) -> None:
    admin = person(r)
    w.add(fill(_CISCO_HEAD, {"site": r.choice(["fra1", "ams2", "nyc3"])}))
    for port in range(r.randint(2, 4)):
        interface: dict[str, Segment] = {
            "port": str(port), "peer": values.ip(r, "v4"), "address": values.ip(r, "v4"), "mask": la.netmask(r),
            "v6": values.ip(r, "v6"), "vlan": str(r.randint(2, 4000)),
        }  # fmt: skip
        w.add(fill(_CISCO_INTERFACE, interface))
    tail: dict[str, Segment] = {
        "network": values.ip(r, "v4"), "mask": la.netmask(r), "gateway": values.ip(r, "v4"),
        "source": values.ip(r, "v4"), "wildcard": la.netmask(r), "port": la.port(r),
        "admin": f"{admin.first} {admin.last}", "phone": phone_of(r, admin), "email": values.email(r, admin),
        "snmp": values.ip(r, "v4"), "ntp": values.ip(r), "oid": la.oid(r), "uptime": la.duration(r),
        "oid2": la.oid(r), "octets": la.byte_count(r), "mac": la.mac_address(r), "version": la.version_quad(r),
    }  # fmt: skip
    w.add(fill(_CISCO_TAIL, tail))


_NETPLAN_NIC = """    eth{nic}:
      addresses: [{v4}/24, "{v6}/64"]
      gateway4: {gateway}
      nameservers: {addresses: [{dns1}, {dns2}]}
      macaddress: {mac}
      mtu: 9000
"""


def _netplan(r: random.Random, w: Writer) -> None:
    w.add("network:\n  version: 2\n  ethernets:\n")
    for nic in range(r.randint(1, 3)):
        slots: dict[str, Segment] = {
            "nic": str(nic), "v4": values.ip(r, "v4"), "v6": values.ip(r, "v6"), "gateway": values.ip(r, "v4"),
            "dns1": values.ip(r, "v4"), "dns2": values.ip(r), "mac": la.mac_address(r),
        }  # fmt: skip
        w.add(fill(_NETPLAN_NIC, slots))
    w.add("# /etc/hosts\n")
    for _ in range(r.randint(2, 5)):
        w.add(values.ip(r), f"\t{r.choice(['db', 'web', 'cache'])}-{r.randint(1, 9)}.internal\n")
    w.add("# iptables-save\n")
    for _ in range(r.randint(2, 4)):
        w.add("-A INPUT -s ", values.ip(r, "v4"), f"/{r.randint(8, 32)} -p tcp --dport ", la.port(r), " -j ACCEPT\n")


def network_config(r: random.Random, w: Writer) -> None:
    for configure in r.sample([_cisco, _netplan], 2):
        configure(r, w)
