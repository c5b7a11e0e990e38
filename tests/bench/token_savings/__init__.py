"""Token savings of code mode over direct tool calling and over direct + tool search, per model call.

Method (issue 22):
- The unit is one model call, charged its whole input (a shared agent preamble, preamble.md, 678 tokens; the
  user's prompt; the tool definitions as a chat API is sent them: name, description, input schema; every earlier
  message) and its output. Tool results count as the raw text a client shows the model. Tokens are o200k_base
  (bpe-openai, offline; tiktoken's encodings need a download), plus 4 per message for role and delimiters.
- Per workflow: input, output, total, price-weighted cost (output 5x input), cached cost (prompt caching: the prefix
  shared with the previous call at 0.1x, the rest written at 1.25x, output 5x), peak context, model calls, and
  whether the answer is right (a checker per question, from the servers' data and state).
- Direct: every tool of the catalogue defined up front, parallel tool calls in one turn. Direct + tool search: one
  search tool; a search turn brings the best 5 definitions per query into the conversation. Code mode: the runtime's
  real agent loop, charged from the requests the gateway's LLM proxy sent, including calls the task's code makes
  (`ask_llm`); a multi-question session is one conversation whose snippets run in one real session (mcpexec serve's
  session core, variables kept). The code-mode column is the runtime as it is ("final" in code.py); the earlier
  rungs ("before", "compact", "signature") are measured in the same run, "signature" at every catalogue.
- Catalogues: the reference servers, and with recorded `tools/list` outputs of widely used servers (Notion; GitHub,
  Notion and Playwright): see catalogues.py.
- Scripted: no model is reachable here, so a stand-in writes each turn: direct mode's tool calls and answers from
  what it was shown, code mode's code (which really runs against the real servers through the real gateway and
  runtime) and answers from what it printed. Where direct mode's answer needs arithmetic over hundreds of rows in
  the model's head, the stand-in does it exactly and the row says so (`assumes`). With LLM_BASE_URL set, both modes
  also run live (live.py: every workflow, the ten-question session as one conversation) and the API's own `usage`
  is reported.

Figures (scripted, price-weighted, 13 workflows, all answers right in every mode, one run on a 2-core VM;
docs/token-savings.md): reference catalogue (5.5k tokens of definitions) 94.5% saved vs direct, 93.5% vs direct + tool
search; ~20k 96.6% and 93.5%; ~50k 97.7% and 93.1%. Before code marked ```python final could end the task (same run):
92.1% / 90.6% at the reference catalogue, 96.7% vs direct at ~50k. Code mode costs less than direct + tool search on
every workflow price-weighted; with prompt caching it costs slightly more on two (the 20k-token transcript summary
and the trivial lookup, by 0.2% and 6%). Compare with whole-task measurements (every model call charged), not with
single-example footprints (one pass over one example's text).
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import httpx

from gateway.tools.catalog import count_text_tokens, count_tokens
from mcpexec.api.mcpserver import MCPServerSpec
from tests.bench.token_savings import code, direct, live
from tests.bench.token_savings.accounting import Charge
from tests.bench.token_savings.catalogues import CATALOGUES, REFERENCE, recorded_specs, sources
from tests.bench.token_savings.data import Data, write
from tests.bench.token_savings.report import as_charge, row, saving, table, totals
from tests.bench.token_savings.scripts import Workflow
from tests.bench.token_savings.workflows import sanity, workflows
from tests.integration.runtime.conftest import RuntimeHarness, runtime_harness
from tests.support.components import reference_server_commands
from tests.support.scripted_llm import ScriptedLLM
from tests.support.tasks import make_task

PREAMBLE = (Path(__file__).parent / "preamble.md").read_text()
LADDER: list[code.Flow] = ["before", "compact", "signature", "final"]
TODAY: code.Flow = "final"  # the code-mode column: the runtime as it is
PREVIOUS: code.Flow = "signature"  # measured at every catalogue too, for the before/after table
MODES = ["direct", "direct+search", "code"]
TARGETS = {"vs_direct": 0.90, "vs_search": 0.85, "vs_direct_50k": 0.97}


def _specs(data: Data) -> dict[str, MCPServerSpec]:
    commands = reference_server_commands(data.files)
    specs = {
        name: MCPServerSpec(transport="stdio", command=commands[name])
        for name in ("everything", "filesystem", "git", "time")
    }
    specs["memory"] = MCPServerSpec(
        transport="stdio", command=commands["memory"], env={"MEMORY_FILE_PATH": str(data.memory)}
    )
    return specs | recorded_specs()


def _reset(client: httpx.Client, workflow: Workflow) -> None:
    for name, arguments in workflow.reset:
        direct.call(client, name, arguments)


def _measure(
    harness: RuntimeHarness,
    cores: code.SessionCores,
    model: code.ScriptedModel,
    flows: list[tuple[str, code.Flow]],
    data: Data,
) -> dict[str, Any]:
    clients = {
        name: harness.gateway.client_for(make_task(f"direct-{i}", servers))
        for i, (name, servers) in enumerate(CATALOGUES.items())
    }
    reference = clients["reference"]
    tools = {name: direct.catalogue_tools(client) for name, client in clients.items()}
    rows: dict[str, dict[str, dict[str, dict[str, Any]]]] = {name: {} for name in CATALOGUES}
    previous: dict[str, dict[str, dict[str, dict[str, Any]]]] = {name: {} for name in CATALOGUES}
    ladder: dict[str, dict[str, dict[str, Any]]] = {}
    skills: dict[str, dict[str, dict[str, Any]]] = {}
    meters: dict[str, dict[str, int]] = {}
    for workflow in workflows(data):
        _reset(reference, workflow)
        recorded = direct.record(reference, workflow)
        _reset(reference, workflow)
        assumes = [q.direct.assumes for q in workflow.questions if q.direct.assumes]
        for catalogue, client in clients.items():
            notes = [f"assumes the model {a}" for a in dict.fromkeys(assumes)]
            rows[catalogue][workflow.name] = {
                "direct": row(
                    direct.direct_calls(recorded, workflow, PREAMBLE, tools[catalogue]), recorded.right, notes
                )
            }
            calls, missed = direct.search_calls(recorded, workflow, PREAMBLE, client)
            rows[catalogue][workflow.name]["direct+search"] = row(
                calls, recorded.right and not missed, notes + [f"search missed {m}" for m in missed]
            )
        for catalogue, flow in flows:
            ran = code.run(harness, cores, model, workflow, CATALOGUES[catalogue], flow, PREAMBLE)
            _reset(reference, workflow)
            figures = row(ran.calls, ran.right, ran.notes)
            if flow == PREVIOUS:
                previous[catalogue][workflow.name] = {
                    "code": figures,
                    **{m: rows[catalogue][workflow.name][m] for m in ("direct", "direct+search")},
                }
            if flow == TODAY:
                rows[catalogue][workflow.name]["code"] = figures
                if catalogue == "reference" and ran.meter:
                    meters[workflow.name] = ran.meter
            if catalogue == "reference":
                ladder.setdefault(workflow.name, {})[flow] = figures
    for workflow in workflows(data):
        if not all(q.code.skill for q in workflow.questions):
            continue
        for flow in ("skill-first", "skill"):
            ran = code.run(harness, cores, model, workflow, REFERENCE, flow, PREAMBLE)
            skills.setdefault(workflow.name, {})[flow] = row(ran.calls, ran.right, ran.notes)
        skills[workflow.name]["direct+search"] = rows["reference"][workflow.name]["direct+search"]
    for client in clients.values():
        client.close()
    return {
        "rows": rows,
        "previous": previous,
        "ladder": ladder,
        "skills": skills,
        "meters": meters,
        "tool_tokens": {n: count_tokens(t) for n, t in tools.items()},
    }


def _summary(rows: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    summed = totals(rows, MODES)
    code_, direct_, search_ = (
        Charge(
            **{k: summed[m][k] for k in ("input", "output", "cost", "cached_cost")},
            peak_context=0,
            calls=summed[m]["model_calls"],
        )
        for m in ("code", "direct", "direct+search")
    )
    worse = [name for name, r in rows.items() if as_charge(r["code"]).cost > as_charge(r["direct+search"]).cost]
    return {
        "totals": summed,
        "saving_vs_direct": saving(code_, direct_),
        "saving_vs_search": saving(code_, search_),
        "cached_saving_vs_direct": round(1 - code_.cached_cost / direct_.cached_cost, 3),
        "cached_saving_vs_search": round(1 - code_.cached_cost / search_.cached_cost, 3),
        "code_costs_more_than_search": worse,
        "table": table(rows, MODES),
    }


def run() -> dict[str, Any]:
    flows: list[tuple[str, code.Flow]] = [("reference", f) for f in LADDER] + [
        (c, f) for c in CATALOGUES if c != "reference" for f in (PREVIOUS, TODAY)
    ]
    model = code.ScriptedModel()
    for noisy in ("mcpexec", "httpx"):  # the gateway's audit log and the clients' request log: a line per call
        logging.getLogger(noisy).setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="mcpexec-tokens-") as tmp:
        data = write(Path(tmp))
        sanity(data)
        with (
            ScriptedLLM(model) as llm,
            runtime_harness(llm=llm.upstream("k"), extra_servers=_specs(data)) as harness,
            code.session_cores(_specs(data)) as cores,
        ):
            measured = _measure(harness, cores, model, flows, data)
        live_figures = live.run(_specs(data), data, PREAMBLE) if os.environ.get("LLM_BASE_URL") else None
    by_catalogue = {name: _summary(rows) for name, rows in measured["rows"].items()}
    before = {name: _summary(rows) for name, rows in measured["previous"].items()}
    ladder_totals = totals(measured["ladder"], list(LADDER))
    reference, big = by_catalogue["reference"], by_catalogue["~50k"]
    return {
        "transcripts": "scripted: no model is reachable here (live figures need LLM_BASE_URL)"
        if live_figures is None
        else "scripted and live",
        "tokenizer": "o200k_base (bpe-openai, offline)",
        "preamble_tokens": count_text_tokens(PREAMBLE),
        "catalogue_tool_tokens": measured["tool_tokens"],
        "catalogue_sources": sources(),
        "catalogues": {
            name: {"summary": {k: v for k, v in s.items() if k != "table"}, "workflows": measured["rows"][name]}
            for name, s in by_catalogue.items()
        },
        "tables": {name: s["table"] for name, s in by_catalogue.items()},
        "before_after": {
            name: {
                "code_cost": {PREVIOUS: before[name]["totals"]["code"]["cost"], TODAY: s["totals"]["code"]["cost"]},
                "saving_vs_direct": {PREVIOUS: before[name]["saving_vs_direct"], TODAY: s["saving_vs_direct"]},
                "saving_vs_search": {PREVIOUS: before[name]["saving_vs_search"], TODAY: s["saving_vs_search"]},
                "code_costs_more_than_search": {
                    PREVIOUS: before[name]["code_costs_more_than_search"],
                    TODAY: s["code_costs_more_than_search"],
                },
            }
            for name, s in by_catalogue.items()
        },
        "cuts_at_reference": {"totals": ladder_totals, "table": table(measured["ladder"], list(LADDER))},
        "skills_repeated_task": measured["skills"],
        "gateway_meter_code_mode": measured["meters"],
        "targets": {
            "vs_direct >= 0.90 (reference)": reference["saving_vs_direct"] >= TARGETS["vs_direct"],
            "vs_direct+search >= 0.85 (reference)": reference["saving_vs_search"] >= TARGETS["vs_search"],
            "no workflow where code costs more than direct+search (reference)": not reference[
                "code_costs_more_than_search"
            ],
            "vs_direct >= 0.97 (~50k)": big["saving_vs_direct"] >= TARGETS["vs_direct_50k"],
        },
        "live": live_figures,
    }
