"""What the e2e node is built from: Go-built node binaries, image archives, the project's images, Debian packages,
kubectl (each built or installed once, cached)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path

from tests.support.components import CACHE_ROOT, REPO

E2E = REPO / "tests" / "e2e"


PROJECT_VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


CNI_BIN_DIR = Path("/usr/lib/cni")


DEBIAN_PACKAGES = {
    "containerd": "containerd",
    "runc": "runc",
    "containernetworking-plugins": "bridge",
    "iptables": "iptables",
    "conntrack": "conntrack",
}


def last_line_of(cmd: Sequence[str], what: str) -> str:
    out = subprocess.run(list(cmd), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{what} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    return out.stdout.strip().splitlines()[-1]


def node_binaries() -> Path:
    """kubelet, kube-scheduler, containerd-shim-runsc-v1 and runsc: built once from the Go module proxy."""
    return Path(last_line_of(["bash", str(E2E / "build-node.sh")], "tests/e2e/build-node.sh"))


def image_archives(bins: Path) -> Path:
    """pause.tar, busybox.tar and coredns.tar (docker-archive), built once with buildah."""
    return Path(last_line_of(["bash", str(E2E / "images" / "build.sh"), str(bins)], "tests/e2e/images/build.sh"))


def project_image(name: str) -> Path:
    """The docker-archive of mcpexec/<name> (runtime, controller, gateway) built from the current sources:
    images/build-rootfs.sh rebuilds only when the image's inputs changed."""
    subprocess.run(["bash", str(REPO / "images" / "build-rootfs.sh"), name], check=True)
    return CACHE_ROOT / "images" / f"{name}-{PROJECT_VERSION}.tar"


def ensure_debian_packages() -> None:
    missing = [
        pkg for pkg, probe in DEBIAN_PACKAGES.items() if not (shutil.which(probe) or (CNI_BIN_DIR / probe).exists())
    ]
    if missing:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env)


def kubectl_binary() -> Path | None:
    from tests.support.components import CACHE_ROOT

    candidates = [*CACHE_ROOT.glob("k8s-tools-*/kubectl")]
    found = shutil.which("kubectl")
    if found:
        candidates.append(Path(found))
    return candidates[0] if candidates else None
