"""A hostile task author against the host's disk through /skills (issue 17): an owner's skills are a persistent ext4
image of the task's `skills.size`, mounted while runs use it; a run without an owner gets a 64Mi throwaway one; both
give ENOSPC inside past their bound. The sandbox runs as a system user of its own, not the shared `nobody`."""

from __future__ import annotations

import os
import pwd
import threading
from pathlib import Path

from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.mounts import mounted_under
from mcpexec.local.run import LocalOutcome
from mcpexec.local.sandbox.identity import SANDBOX_USER
from tests.sandbox.local.conftest import owner_image, run_code

FILL = """
import errno, os
written = made = 0
try:
    with open('/skills/big', 'wb', buffering=0) as out:
        while written < 128 << 20:
            written += out.write(b'x' * (1 << 20))
except OSError as exc:
    print('bytes', written, errno.errorcode[exc.errno])
os.remove('/skills/big')
try:
    while True:
        open(f'/skills/f{made}', 'w').close()
        made += 1
except OSError as exc:
    print('files', made, errno.errorcode[exc.errno])
"""


def _figures(outcome: LocalOutcome) -> dict[str, tuple[int, str]]:
    assert outcome.phase == "Succeeded", outcome.error
    lines = [line.split() for line in outcome.result.splitlines()]
    return {what: (int(count), reason) for what, count, reason in lines}


def test_an_owners_skills_are_bounded_in_bytes_and_inodes(
    demo_servers: dict[str, MCPServerSpec], state_home: Path
) -> None:
    owner = {"owner": "bounded", "size": "16Mi"}
    figures = _figures(run_code(FILL, demo_servers, skills=owner))
    written, reason = figures["bytes"]
    assert reason == "ENOSPC" and (14 << 20) < written <= 16 << 20, figures
    made, reason = figures["files"]
    assert reason == "ENOSPC" and 900 < made < 1024, figures  # one inode per 16 KiB
    image = state_home / "skills" / "bounded.img"
    assert image.stat().st_blocks * 512 <= (16 << 20) + (1 << 20), "the host's disk gave more than the bound"
    assert not mounted_under(state_home / "skills"), "the image stayed mounted after its last run"


def test_a_run_without_an_owner_has_a_64mi_skills_folder_of_its_own(demo_servers: dict[str, MCPServerSpec]) -> None:
    figures = _figures(run_code(FILL, demo_servers))
    written, reason = figures["bytes"]
    assert reason == "ENOSPC" and (60 << 20) < written <= 64 << 20, figures
    assert figures["files"][1] == "ENOSPC"


SAVE = """
import os, time
open('/skills/{name}', 'w').write('{name}')
time.sleep({pause})
print(sorted(os.listdir('/skills')))
"""


def test_skills_persist_and_concurrent_runs_of_one_owner_share_the_mounted_image(
    demo_servers: dict[str, MCPServerSpec], state_home: Path
) -> None:
    """Two runs at once mount the image once; the one that ends first leaves it to the other; the last unmounts."""
    outcomes: dict[str, LocalOutcome] = {}

    def run(name: str, pause: float) -> None:
        outcomes[name] = run_code(SAVE.format(name=name, pause=pause), demo_servers, skills={"owner": "shared"})

    slow = threading.Thread(target=run, args=("slow", 8))
    slow.start()
    run("fast", 0)  # starts while the slow run holds the image mounted, ends before it
    slow.join()
    assert outcomes["fast"].phase == outcomes["slow"].phase == "Succeeded", outcomes
    assert outcomes["slow"].result.strip() == "['fast', 'slow']", outcomes["slow"].result
    assert not mounted_under(state_home / "skills")
    later = run_code("import os\nprint(sorted(os.listdir('/skills')))", demo_servers, skills={"owner": "shared"})
    assert later.result.strip() == "['fast', 'slow']", later
    with owner_image(state_home, "shared") as inside:
        assert sorted(p.name for p in inside.iterdir()) == ["fast", "slow"]


def test_skills_saved_before_images_move_in_as_plain_files(
    demo_servers: dict[str, MCPServerSpec], state_home: Path, tmp_path: Path
) -> None:
    """An earlier version kept an owner's skills as a plain folder: they move into the new image as plain files,
    writable by the sandbox. The folder goes once all of it moved in; one holding what is not moved (links here) is
    kept beside the image, so nothing is lost."""
    (tmp_path / "secret").write_text("host file")
    for owner in ("plain", "linked"):
        earlier = state_home / "skills" / owner
        (earlier / "report").mkdir(parents=True)
        (earlier / "report" / "SKILL.md").write_text("makes a report")
    (state_home / "skills" / "linked" / "passwd").symlink_to("/etc/passwd")
    (state_home / "skills" / "linked" / "report" / "secret").symlink_to(tmp_path / "secret")
    code = "import os\nopen('/skills/report/SKILL.md', 'a').write(' daily')\nprint(sorted(os.listdir('/skills')))"
    for owner in ("plain", "linked"):
        outcome = run_code(code, demo_servers, skills={"owner": owner})
        assert outcome.phase == "Succeeded", outcome.error
        assert outcome.result.strip() == "['report']"
        with owner_image(state_home, owner) as inside:
            assert (inside / "report" / "SKILL.md").read_text() == "makes a report daily"
            assert sorted(p.name for p in (inside / "report").iterdir()) == ["SKILL.md"]
    assert not (state_home / "skills" / "plain.before-image").exists()
    kept = state_home / "skills" / "linked.before-image"
    assert (kept / "passwd").is_symlink() and (kept / "report" / "SKILL.md").read_text() == "makes a report"


def test_the_sandbox_runs_as_a_system_user_of_its_own(demo_servers: dict[str, MCPServerSpec]) -> None:
    """Not the shared nobody: a system user made for mcpexec, which has no login, owns the sandbox's files."""
    code = (
        "import os\nopen('/skills/mine', 'w').close()\nprint(os.getuid(), os.getgid(), os.stat('/skills/mine').st_uid)"
    )
    outcome = run_code(code, demo_servers)
    assert outcome.phase == "Succeeded", outcome.error
    user = pwd.getpwnam(SANDBOX_USER)  # made by the first run on this machine
    assert 0 < user.pw_uid < 1000 and user.pw_uid != 65534 and user.pw_shell == "/usr/sbin/nologin"
    assert outcome.result.split() == [str(user.pw_uid), str(user.pw_gid), str(user.pw_uid)]
    assert os.stat(outcome.workspace).st_uid == 0, "the copy the user browses is root's"
