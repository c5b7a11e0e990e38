"""The images, built here without Docker or a registry (images/build-rootfs.sh), really run."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from tests.support.components import CACHE_ROOT, REPO

IMAGES = CACHE_ROOT / "images"
# The image's entry module imports; only the gateway's has the PII scanner's extension (the operator never imports it).
CHECK = (
    "import os, importlib.util as u; print(os.getuid(), u.find_spec('pip') is None, "
    "u.find_spec('controller') is not None and bool(__import__('controller.handlers')) "
    "and bool(__import__('{entry}.__main__')), u.find_spec('mcpexec_pii_scan') is not None)"
)


@pytest.fixture(scope="module")
def built() -> None:
    done = subprocess.run(["bash", str(REPO / "images" / "build-rootfs.sh")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture
def container(request: pytest.FixtureRequest, built: None) -> Iterator[str]:
    archive = IMAGES / f"{request.param}-0.1.0.tar"
    name = subprocess.run(
        ["buildah", "from", "-q", f"docker-archive:{archive}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    image = subprocess.run(
        ["buildah", "inspect", "--format", "{{.FromImageID}}", name], capture_output=True, text=True, check=True
    ).stdout.strip()
    yield name
    # Leave nothing in buildah's storage: the container, then the image it was loaded as.
    subprocess.run(["buildah", "rm", name], capture_output=True, check=False)
    subprocess.run(["buildah", "rmi", "--force", image], capture_output=True, check=False)


def _inspect(container: str) -> dict[str, object]:
    out = subprocess.run(["buildah", "inspect", container], capture_output=True, text=True, check=True).stdout
    config: dict[str, object] = json.loads(out)["OCIv1"]["config"]
    return config


def _run(container: str, entry: str) -> list[str]:
    done = subprocess.run(
        ["buildah", "run", "--isolation", "chroot", container, "--", "python3", "-c", CHECK.format(entry=entry)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


@pytest.mark.parametrize(
    ("container", "entry", "has_app", "has_pii_scan"),
    [
        ("runtime", "runtime", "False", "False"),
        ("controller", "controller", "True", "False"),
        ("gateway", "gateway", "True", "True"),
    ],
    indirect=["container"],
)
def test_image_runs_as_nobody_without_an_installer(container: str, entry: str, has_app: str, has_pii_scan: str) -> None:
    config = _inspect(container)
    assert config["User"] == "65534:65534"
    assert config["Entrypoint"] == ["python3", "-m", entry]
    uid, no_pip, app, pii_scan = _run(container, entry)
    assert (uid, no_pip, app, pii_scan) == ("65534", "True", has_app, has_pii_scan)


@pytest.mark.parametrize("container", ["redis"], indirect=True)
def test_redis_image_is_debians_redis_server_as_uid_999_without_a_shell(container: str) -> None:
    """The chart's bundled vault where redis:7.2-alpine cannot be pulled (values: images.redis)."""
    config = _inspect(container)
    assert (config["User"], config["Entrypoint"], config["WorkingDir"]) == ("999:999", ["redis-server"], "/data")

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["buildah", "run", "--isolation", "chroot", "--user", "999:999", container, "--", *command],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    version = run("redis-server", "--version")
    assert version.returncode == 0 and version.stdout.startswith("Redis server v=7"), version
    assert run("sh", "-c", "true").returncode != 0
