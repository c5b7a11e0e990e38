"""Hosts for egress tests, on this machine (there is no internet here): a test CA, HTTPS and plain-HTTP servers
serving files from a directory, and a PyPI-style simple index holding a wheel built on the spot."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import ipaddress
import ssl
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.support.certificates import ca_certificate, certificate, common_name


@dataclass(frozen=True)
class CaFiles:
    """A CA only the test trusts (`ca_file`), and a server certificate and key for `names` signed by it."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def make_ca(directory: Path, names: list[str]) -> CaFiles:
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = ca_certificate("mcpexec egress test CA", ca_key)
    alt = [x509.DNSName(name) for name in names] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = certificate(common_name(names[0]), key.public_key(), ca.subject, ca_key, x509.SubjectAlternativeName(alt))
    paths = CaFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return None


@contextlib.contextmanager
def file_server(root: Path, tls: CaFiles | None = None, host: str = "127.0.0.1") -> Iterator[int]:
    """Serve `root` on a free port of `host` (loopback unless told; HTTPS with `tls`); yields the port."""
    server = http.server.ThreadingHTTPServer((host, 0), partial(_Quiet, directory=str(root)))
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls.cert_file, tls.key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def build_wheel(directory: Path, name: str, version: str, module_source: str) -> Path:
    """A pure-Python wheel of one module `name`, as a build backend would make it."""
    dist = f"{name}-{version}"
    files = {
        f"{name}.py": module_source.encode(),
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: mcpexec-tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    files[f"{dist}.dist-info/RECORD"] = ("\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n").encode()
    wheel = directory / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def simple_index(root: Path, name: str, version: str, module_source: str) -> None:
    """`root/simple/<name>/` (PEP 503) listing a wheel of `name`, which `root/files/` holds."""
    (root / "files").mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(root / "files", name, version, module_source)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    project = root / "simple" / name
    project.mkdir(parents=True, exist_ok=True)
    link = f'<a href="../../files/{wheel.name}#sha256={digest}">{wheel.name}</a>'
    (project / "index.html").write_text(f"<!DOCTYPE html><html><body>{link}</body></html>\n")
