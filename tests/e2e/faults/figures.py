"""How big the fault tier is, and where its figures go.

`MCPEXEC_FAULTS=full` selects the whole tier (`make faults`); otherwise the CI-sized part runs (`make test`).
Each scenario's figures (tasks lost, doubled, mixed; seconds to recover) are printed and appended as one JSON line to
`MCPEXEC_FAULTS_FIGURES` (default: mcpexec-faults-figures.jsonl in the temporary directory), whence
docs/reliability.md's `## Fault tier` takes them.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

FULL = os.environ.get("MCPEXEC_FAULTS") == "full"
# The random points at which the operator is killed come from this seed (say it to replay a run).
SEED = int(os.environ.get("MCPEXEC_FAULTS_SEED", "31"))
FIGURES = Path(os.environ.get("MCPEXEC_FAULTS_FIGURES", Path(tempfile.gettempdir()) / "mcpexec-faults-figures.jsonl"))


def record_figures(scenario: str, **figures: object) -> None:
    line = json.dumps({"scenario": scenario, "tier": "full" if FULL else "ci", "at": time.strftime("%FT%T"), **figures})
    print(f"fault figures: {line}")
    with FIGURES.open("a") as out:
        out.write(line + "\n")
