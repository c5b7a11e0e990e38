"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and kube-controller-manager.

The binaries come from tests/cluster/build-control-plane.sh (built once from the Go module proxy and
cached), or from KUBEBUILDER_ASSETS when set. The admin client authenticates with a static token in
`system:masters`; the kube-controller-manager runs the Job and garbage-collector controllers, so owner
references and Job -> Pod work as in a cluster. There is no scheduler or kubelet: tests that need a
pod to finish write its status themselves, as a kubelet would.
"""

from __future__ import annotations

import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes import client, config

from tests.support.components import built_by, free_port

ADMIN_USER = "mcpexec-test-admin"
CONTROLLERS = "garbagecollector,job,namespace,serviceaccount,serviceaccount-token"


def binaries_dir() -> Path:
    """Where kube-apiserver, kube-controller-manager and etcd are: built (once) if need be."""
    return built_by("tests/cluster/build-control-plane.sh")


@dataclass(frozen=True)
class ControlPlane:
    url: str
    token: str
    kubeconfig: Path
    workdir: Path
    # Static tokens of the extra users asked of control_plane(users=...), by user name.
    user_tokens: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    @contextmanager
    def as_default_client(self) -> Iterator[None]:
        """KUBECONFIG and the kubernetes client's default configuration point here while inside (both as they were
        after)."""
        old, old_default = os.environ.get("KUBECONFIG"), client.Configuration.get_default_copy()
        os.environ["KUBECONFIG"] = str(self.kubeconfig)
        config.load_kube_config(config_file=str(self.kubeconfig))
        try:
            yield
        finally:
            client.Configuration.set_default(old_default)
            if old is None:
                os.environ.pop("KUBECONFIG", None)
            else:
                os.environ["KUBECONFIG"] = old


def _wait_ready(url: str, token: str, procs: list[subprocess.Popen[bytes]], timeout: float = 90) -> None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(f"{url}/readyz", headers={"Authorization": f"Bearer {token}"})
    deadline = time.monotonic() + timeout
    while True:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")  # type: ignore[index]
        try:
            with urllib.request.urlopen(request, context=ctx, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"kube-apiserver at {url} not ready after {timeout}s")
        time.sleep(0.25)


def _write_key(path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )


def _write_kubeconfig(path: Path, url: str, token: str, ca: Path) -> None:
    """Clients verify the API server against the self-signed certificate it generated in --cert-dir."""
    cluster = {"server": url, "certificate-authority": str(ca)}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "test", "cluster": cluster}],
                "users": [{"name": "admin", "user": {"token": token}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
                "current-context": "test",
            }
        )
    )


def spawn(
    stack: ExitStack, args: list[str], log: Path, env: dict[str, str] | None = None, stop_seconds: float = 15
) -> subprocess.Popen[bytes]:
    """Start a component logging to `log`; the stack stops it (SIGTERM, then SIGKILL after `stop_seconds`)."""
    handle = stack.enter_context(log.open("wb"))
    proc = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=stop_seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    stack.callback(stop)
    return proc


@contextmanager
def control_plane(
    with_controller_manager: bool = True,
    *,
    address: str = "127.0.0.1",
    users: Mapping[str, Sequence[str]] | None = None,
    apiserver_args: Sequence[str] = (),
    controllers: str = CONTROLLERS,
    controller_manager_args: Sequence[str] = (),
) -> Iterator[ControlPlane]:
    """Start etcd + kube-apiserver (+ kube-controller-manager); stop and delete everything after.

    The API server listens on `address` (its URL and certificate use it: give a non-loopback address
    when pods must reach it). `users` maps extra user names to their groups; each gets a static token
    (ControlPlane.user_tokens). `apiserver_args` and `controller_manager_args` come after the defaults
    (a repeated scalar flag wins; list flags such as --authorization-mode append).
    """
    bins = binaries_dir()
    workdir = Path(tempfile.mkdtemp(prefix="mcpexec-cp-"))
    token = secrets.token_hex(16)
    user_tokens = {name: secrets.token_hex(16) for name in users or {}}
    lines = [f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"']
    for name, groups in (users or {}).items():
        lines.append(f'{user_tokens[name]},{name},{name},"{",".join(groups)}"')
    (workdir / "tokens.csv").write_text("\n".join(lines) + "\n")
    _write_key(workdir / "sa.key")
    etcd_port, etcd_peer, api_port = free_port(), free_port(), free_port()
    url = f"https://{address}:{api_port}"
    kubeconfig = workdir / "kubeconfig"
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, True)
        etcd = spawn(
            stack,
            [
                str(bins / "etcd"),
                "--data-dir", str(workdir / "etcd"),
                "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync",
            ],
            workdir / "etcd.log",
        )  # fmt: skip
        apiserver = spawn(
            stack,
            [
                str(bins / "kube-apiserver"),
                "--etcd-servers", f"http://127.0.0.1:{etcd_port}",
                "--bind-address", address,
                "--secure-port", str(api_port),
                "--cert-dir", str(workdir / "certs"),
                "--token-auth-file", str(workdir / "tokens.csv"),
                "--authorization-mode", "RBAC",
                "--service-account-issuer", "https://kubernetes.default.svc",
                "--service-account-key-file", str(workdir / "sa.key"),
                "--service-account-signing-key-file", str(workdir / "sa.key"),
                "--service-cluster-ip-range", "10.96.0.0/16",
                "--allow-privileged=false",
                *apiserver_args,
            ],
            workdir / "kube-apiserver.log",
        )  # fmt: skip
        try:
            _wait_ready(url, token, [etcd, apiserver])
        except RuntimeError as exc:
            tail = (workdir / "kube-apiserver.log").read_text(errors="replace").strip().splitlines()[-15:]
            raise RuntimeError(f"{exc}; kube-apiserver.log ends with:\n" + "\n".join(tail)) from None
        _write_kubeconfig(kubeconfig, url, token, workdir / "certs" / "apiserver.crt")
        if with_controller_manager:
            spawn(
                stack,
                [
                    str(bins / "kube-controller-manager"),
                    "--kubeconfig", str(kubeconfig),
                    "--leader-elect=false",
                    "--secure-port", "0",
                    "--controllers", controllers,
                    "--service-account-private-key-file", str(workdir / "sa.key"),
                    "--concurrent-gc-syncs", "5",
                    # The cluster CA that pods see (kube-root-ca.crt, ca.crt in token Secrets).
                    "--root-ca-file", str(workdir / "certs" / "apiserver.crt"),
                    *controller_manager_args,
                ],
                workdir / "kube-controller-manager.log",
            )  # fmt: skip
        yield ControlPlane(url=url, token=token, kubeconfig=kubeconfig, workdir=workdir, user_tokens=user_tokens)
