"""Certificates for tests: a CA only the test trusts, and certificates it signs (valid from five minutes ago for a
day). The e2e node's kubelet client CA and the egress tests' server CA are both made here."""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes, CertificatePublicKeyTypes
from cryptography.x509.oid import NameOID


def common_name(name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def certificate(
    subject: x509.Name,
    public_key: CertificatePublicKeyTypes,
    issuer: x509.Name,
    issuer_key: CertificateIssuerPrivateKeyTypes,
    extension: x509.ExtensionType,
    critical: bool = False,
) -> x509.Certificate:
    """A certificate of `subject`'s key with one extension, signed by `issuer_key`."""
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(extension, critical=critical)
        .sign(issuer_key, hashes.SHA256())
    )


def ca_certificate(name: str, key: CertificateIssuerPrivateKeyTypes) -> x509.Certificate:
    """A self-signed CA named `name`."""
    return certificate(
        common_name(name),
        key.public_key(),
        common_name(name),
        key,
        x509.BasicConstraints(ca=True, path_length=None),
        True,
    )
