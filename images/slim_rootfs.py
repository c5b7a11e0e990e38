"""Copy a minimal root filesystem out of a debootstrap one: the files of some packages' closure only.

    python3 images/slim_rootfs.py BASE DEST [PACKAGE ...]      (default: python3 libstdc++6 tzdata base-files)

No shell, no package manager, no perl, no coreutils: what Debian's python3 needs to start, its standard
library, tzdata and the CA bundle, plus `nobody` (uid 65534) in /etc/passwd. The closure follows
Depends and Pre-Depends of the installed packages, minus the packages that only serve package
maintainer scripts (NOT_AT_RUN_TIME).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

# libstdc++6: the C++ extensions among the project's dependencies (google-re2) load it.
ROOTS = ("python3", "libstdc++6", "tzdata", "base-files")
NOT_AT_RUN_TIME = frozenset({"debconf", "perl-base", "dpkg", "mawk", "adduser"})
# Documentation, and glibc's iconv modules (8 MB; Python's codecs do not use iconv).
DROPPED_DIRS = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/lintian",
    "usr/lib/x86_64-linux-gnu/gconv",
)
PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
FROM_BASE = ("etc/ssl/certs/ca-certificates.crt", "etc/nsswitch.conf")


def _name(relation: str) -> str:
    return re.split(r"[\s(:]", relation.strip(), maxsplit=1)[0]


def installed_packages(base: Path) -> tuple[dict[str, list[list[str]]], dict[str, str]]:
    """Package -> its dependencies (each a list of alternatives), and virtual package -> provider."""
    depends: dict[str, list[list[str]]] = {}
    provides: dict[str, str] = {}
    for stanza in (base / "var/lib/dpkg/status").read_text().split("\n\n"):
        fields = dict(
            line.split(":", 1) for line in stanza.splitlines() if line and not line[0].isspace() and ":" in line
        )
        if "Package" not in fields or "install ok installed" not in fields.get("Status", ""):
            continue
        name = fields["Package"].strip()
        relations = ",".join(fields.get(key, "") for key in ("Pre-Depends", "Depends"))
        depends[name] = [[_name(alt) for alt in rel.split("|")] for rel in relations.split(",") if rel.strip()]
        for virtual in filter(str.strip, fields.get("Provides", "").split(",")):
            provides.setdefault(_name(virtual), name)
    return depends, provides


def closure(base: Path, roots: tuple[str, ...] = ROOTS) -> list[str]:
    depends, provides = installed_packages(base)
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        name = name if name in depends else provides.get(name, name)
        if name in seen or name in NOT_AT_RUN_TIME:
            continue
        if name not in depends:
            raise SystemExit(f"{name} is needed but not installed in {base}")
        seen.add(name)
        todo.extend(next((a for a in alts if a in depends or a in provides), alts[0]) for alts in depends[name])
    return sorted(seen)


def package_paths(base: Path, package: str) -> list[str]:
    info = base / "var/lib/dpkg/info"
    for candidate in (info / f"{package}.list", info / f"{package}:amd64.list"):
        if candidate.exists():
            return candidate.read_text().splitlines()
    raise SystemExit(f"no file list for {package} in {info}")


def copy_path(base: Path, dest: Path, listed: str) -> None:
    """Copy one listed path, resolving symlinked parent directories (merged /usr) inside `base`."""
    relative = os.path.normpath(listed).lstrip("/")
    if relative in ("", ".") or any(relative == d or relative.startswith(d + "/") for d in DROPPED_DIRS):
        return
    source = (base / relative).parent.resolve() / Path(relative).name
    if not source.is_relative_to(base.resolve()):
        raise SystemExit(f"{listed} resolves outside {base}")
    target = dest / source.relative_to(base.resolve())
    if source.is_dir() and not source.is_symlink():
        target.mkdir(parents=True, exist_ok=True)
        shutil.copystat(source, target)
    elif (source.exists() or source.is_symlink()) and not (target.exists() or target.is_symlink()):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)


def main(base: Path, dest: Path, roots: tuple[str, ...] = ROOTS) -> None:
    if dest.exists():
        raise SystemExit(f"{dest} exists")
    dest.mkdir(parents=True)
    # Debian's merged /usr: /bin, /lib, /lib64 and /sbin are symlinks into /usr.
    for top in ("bin", "lib", "lib64", "sbin"):
        if (base / top).is_symlink():
            (dest / top).symlink_to(os.readlink(base / top))
    packages = closure(base, roots)
    for package in packages:
        for listed in package_paths(base, package):
            copy_path(base, dest, listed)
    for relative in FROM_BASE:
        if (base / relative).exists():  # the CA bundle only where ca-certificates is installed
            (dest / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(base / relative, dest / relative)
    (dest / "etc/passwd").write_text(PASSWD)
    (dest / "etc/group").write_text(GROUP)
    for writable in ("tmp", "var/tmp"):
        (dest / writable).mkdir(parents=True, exist_ok=True)
        (dest / writable).chmod(0o1777)
    print(" ".join(packages))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]), tuple(sys.argv[3:]) or ROOTS)
