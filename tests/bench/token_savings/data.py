"""The data the workflows work on, written for the real servers, and the ground truth each checker compares with.

Generated from a fixed seed: a 3,000-row sales CSV and a ~20k-token meeting transcript (filesystem server), a git
repository of 300 commits over 17 modules with three risky changes hidden under ordinary messages and dates spread
over a year (git server), and a knowledge graph of 50 teams owning 100 services (memory server).
"""

from __future__ import annotations

import collections
import csv
import datetime as dt
import io
import json
import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

REGIONS = ["north", "south", "east", "west"]
KINDS = ["fix", "feat", "docs", "refactor", "test"]
RISKY_LINES = [
    "response = session.get(url, verify=False)  # TLS certificate checks off",
    "os.chmod(KEY_FILE, 0o777)  # anyone may read and write the signing key",
    "subprocess.run(request.args['cmd'], shell=True)  # runs a command taken from the request",
]
DECISIONS = [
    "the public launch moves from the second to the ninth of March",
    "the billing service is frozen until the audit closes",
    "Ingrid owns the migration runbook from now on",
]
_TEXT = (
    "we need to look at the rollout plan again because the numbers from last week were not what anyone "
    "expected and the team thinks the dashboards still lag behind the real traffic so maybe the alerts "
    "should fire earlier while the support queue keeps growing and nobody has time to write the "
    "postmortem for the cache incident yet the design review is open and the mobile client needs another "
    "pass before we can ship the new onboarding flow"
)
_WORDS = _TEXT.split()
_SPEAKERS = ["Ingrid", "Tomas", "Wei", "Amara", "Lucas", "Noor"]


@dataclass(frozen=True)
class Commit:
    number: int
    sha: str
    kind: str
    module: int
    date: dt.datetime

    @property
    def message(self) -> str:
        return f"{self.kind}: change number {self.number} in module m{self.module}"


@dataclass(frozen=True)
class Data:
    root: Path
    files: Path
    repo: Path
    memory: Path
    revenue: dict[str, int]  # region -> sum of units * unit_price
    transcript: str
    commits: list[Commit]  # oldest first
    risky: list[str]  # full SHAs of the three risky commits
    owners: dict[str, str]  # service -> owning team

    @property
    def csv_path(self) -> str:
        return str(self.files / "sales.csv")

    @property
    def transcript_path(self) -> str:
        return str(self.files / "meeting.txt")

    def busiest_weekday(self) -> str:
        return collections.Counter(c.date.strftime("%A") for c in self.commits).most_common(1)[0][0]

    def top_teams(self, n: int = 3) -> list[tuple[str, int]]:
        return collections.Counter(self.owners.values()).most_common(n)


def _sales(rng: random.Random) -> tuple[str, dict[str, int]]:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["order_id", "region", "product", "units", "unit_price"])
    revenue: collections.Counter[str] = collections.Counter()
    for i in range(3000):
        region, units, price = rng.choice(REGIONS), rng.randint(1, 20), rng.randint(5, 500)
        writer.writerow([f"O{i:05d}", region, f"P{rng.randint(1, 40):02d}", units, price])
        revenue[region] += units * price
    return out.getvalue(), dict(revenue)


def _transcript(rng: random.Random) -> str:
    lines = []
    where = sorted(rng.sample(range(40, 1060), len(DECISIONS)))
    for i in range(1100):
        speaker = rng.choice(_SPEAKERS)
        if i in where:
            lines.append(f"{speaker}: Decision: {DECISIONS[where.index(i)]}.")
            continue
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 22)))
        lines.append(f"{speaker}: {sentence.capitalize()}.")
    return "\n".join(lines) + "\n"


def _repository(repo: Path, rng: random.Random) -> tuple[list[Commit], list[str]]:
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    risky_at = dict(zip(sorted(rng.sample(range(20, 290), 3)), RISKY_LINES, strict=True))
    day = dt.datetime(2024, 1, 1, 10, 0, tzinfo=dt.UTC)
    commits, risky = [], []
    for number in range(300):
        day += dt.timedelta(days=1 if day.weekday() != 3 or rng.random() < 0.5 else 0, minutes=7)
        module = number % 17
        source = repo / f"m{module}.py"
        added = risky_at.get(number, f"value_{number} = {number}")
        source.write_text((source.read_text() if source.exists() else "") + added + "\n")
        kind = rng.choice(KINDS)
        env = {**os.environ, "GIT_AUTHOR_DATE": day.isoformat(), "GIT_COMMITTER_DATE": day.isoformat()}
        subprocess.run([*git, "add", source.name], check=True)
        message = f"{kind}: change number {number} in module m{module}"
        subprocess.run([*git, "commit", "-q", "-m", message], check=True, env=env)
        sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
        commits.append(Commit(number, sha, kind, module, day))
        if number in risky_at:
            risky.append(sha)
    return commits, risky


def _graph(rng: random.Random) -> tuple[list[dict[str, object]], dict[str, str]]:
    teams = [f"team-{i}" for i in range(50)]
    weights = [1 / (rank + 1) for rank in range(len(teams))]
    lines: list[dict[str, object]] = [
        {"type": "entity", "name": t, "entityType": "team", "observations": [f"formed in sprint {i % 12}"]}
        for i, t in enumerate(teams)
    ]
    owners = {}
    for i in range(100):
        service = f"service-{i}"
        owners[service] = rng.choices(teams, weights)[0]
        lines.append({"type": "entity", "name": service, "entityType": "service",
                      "observations": [f"owner of component c{i}", f"created in sprint {i % 12}"]})  # fmt: skip
    lines += [{"type": "relation", "from": s, "to": t, "relationType": "owned_by"} for s, t in owners.items()]
    return lines, owners


def write(root: Path, seed: int = 7) -> Data:
    rng = random.Random(seed)
    files = root / "files"
    files.mkdir()
    sales, revenue = _sales(rng)
    (files / "sales.csv").write_text(sales)
    transcript = _transcript(rng)
    (files / "meeting.txt").write_text(transcript)
    commits, risky = _repository(root / "repo", rng)
    graph, owners = _graph(rng)
    memory = root / "memory.jsonl"
    memory.write_text("\n".join(json.dumps(line) for line in graph) + "\n")
    data = Data(root, files, root / "repo", memory, revenue, transcript, commits, risky, owners)
    counts = [n for _team, n in data.top_teams(4)]
    weekdays = collections.Counter(c.date.strftime("%A") for c in commits).most_common(2)
    if counts[2] == counts[3] or weekdays[0][1] == weekdays[1][1]:
        raise ValueError(f"seed {seed} gives a tie: the questions would have no single answer")
    return data
