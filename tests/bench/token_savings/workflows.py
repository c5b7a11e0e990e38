"""The workflows: what the user asks, how each mode goes about it (scripted), and a checker per question.

Scripted answers are written from what each mode was shown (tool results, printed output), by a stand-in for the
model; where direct mode's answer needs arithmetic over hundreds of rows in the model's head, the stand-in does it
exactly and the workflow says so (`assumes`): a live model may well get it wrong. Code mode's turns are code that
really runs; its answers restate what the code printed.
"""

from __future__ import annotations

import collections
import csv
import datetime as dt
import io
import json
import re
import zoneinfo
from pathlib import Path
from typing import Any

from mcpexec.demo_server import CUSTOMERS
from tests.bench.token_savings.data import DECISIONS, RISKY_LINES, Data
from tests.bench.token_savings.scripts import (
    CodeScript,
    DirectScript,
    Question,
    Seen,
    Skill,
    Workflow,
    integers,
    printed,
)

CITIES = [
    "Europe/Paris",
    "Asia/Tokyo",
    "America/New_York",
    "Australia/Sydney",
    "Africa/Lagos",
    "Asia/Kolkata",
    "America/Sao_Paulo",
    "Europe/Moscow",
    "Asia/Singapore",
    "America/Los_Angeles",
    "Europe/London",
    "Pacific/Auckland",
]
_HHMM = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_DECISION_WORDS = [("ninth", "march"), ("billing", "audit"), ("ingrid", "runbook")]


def _graph_state(memory: Path) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """The memory server's graph as it saved it: entity -> observations, and the relations."""
    entities: dict[str, list[str]] = {}
    relations = []
    for line in memory.read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            if item["type"] == "entity":
                entities[item["name"]] = item["observations"]
            else:
                relations.append(item)
    return entities, relations


def _stand_in_summary(text: str) -> str:
    """Stands in for a model reading a transcript: the decisions it states."""
    decisions = [line.split("Decision:", 1)[1].strip() for line in text.splitlines() if "Decision:" in line]
    return "Decisions:\n" + "\n".join(f"- {d}" for d in decisions)


def _summary_right(answer: str) -> bool:
    lowered = answer.lower()
    return all(all(word in lowered for word in words) for words in _DECISION_WORDS)


def _log_entries(text: str) -> list[dict[str, str]]:
    """git_log's text: `Commit:`, `Author:`, `Date:`, `Message:` lines per commit."""
    entries, current = [], {}
    for line in text.splitlines():
        key, _, value = line.partition(": ")
        if key == "Commit":
            current = {"sha": value}
            entries.append(current)
        elif key in ("Author", "Date", "Message") and current:
            current[key.lower()] = value
    return entries


def _sales(data: Data) -> Workflow:
    def answer(seen: Seen) -> str:
        revenue: collections.Counter[str] = collections.Counter()
        for row in csv.DictReader(io.StringIO(seen.last("filesystem/read_text_file"))):
            revenue[row["region"]] += int(row["units"]) * int(row["unit_price"])
        return "Revenue by region: " + ", ".join(f"{r} {v:,}" for r, v in revenue.most_common())

    program = f"""def regional_revenue(path):
    import csv, io, collections
    text = call_tool("filesystem/read_text_file", {{"path": path}})["content"]
    revenue = collections.Counter()
    for row in csv.DictReader(io.StringIO(text)):
        revenue[row["region"]] += int(row["units"]) * int(row["unit_price"])
    return dict(revenue.most_common())
print("Revenue by region:", regional_revenue({data.csv_path!r}))"""
    skill = Skill(
        "regional_revenue",
        "regional_revenue",
        "regional_revenue(path) -> {region: revenue} of a sales CSV (units * unit_price)",
        program,
        f"print('Revenue by region:', load_skill('regional_revenue').regional_revenue({data.csv_path!r}))",
    )
    return Workflow(
        "summarise a large file",
        [
            Question(
                f"What is the revenue (units x unit_price) per region in {data.csv_path}?",
                DirectScript(
                    [lambda _s: [("filesystem/read_text_file", {"path": data.csv_path})]],
                    answer,
                    assumes="sums 3,000 CSV rows in its head",
                ),
                CodeScript(
                    ["read text file"],
                    ["filesystem/read_text_file"],
                    [program],
                    printed,
                    skill,
                ),
                lambda a: set(data.revenue.values()) <= integers(a),
                ["filesystem/read_text_file"],
                ["read text file"],
            )
        ],
    )


def _customers(data: Data) -> Workflow:
    names = [c.name for c in CUSTOMERS.values()]

    def entities(seen: Seen) -> list[dict[str, Any]]:
        records = [json.loads(t) for t in seen.texts("demo/get_customer")]
        return [
            {
                "name": c["name"],
                "entityType": "customer",
                "observations": [f"email {c['email']}", f"phone {c['phone']}", f"plan {c['plan']}"],
            }
            for c in records
        ]

    def right(_answer: str) -> bool:
        stored, _ = _graph_state(data.memory)
        return all(f"email {c.email}" in stored.get(c.name, []) for c in CUSTOMERS.values())

    program = """entities = []
for summary in call_tool("demo/list_customers", {})["customers"]:
    c = call_tool("demo/get_customer", {"customer_id": summary["id"]})
    entities.append({"name": c["name"], "entityType": "customer",
                     "observations": [f"email {c['email']}", f"phone {c['phone']}", f"plan {c['plan']}"]})
call_tool("memory/create_entities", {"entities": entities})
print("copied", len(entities), "customers:", [e["name"] for e in entities])"""
    return Workflow(
        "copy customer records into the knowledge graph",
        [
            Question(
                "Copy every customer record (email, phone, plan) into the knowledge graph, one entity per customer.",
                DirectScript(
                    [
                        lambda _s: [("demo/list_customers", {})],
                        lambda s: [
                            ("demo/get_customer", {"customer_id": c["id"]})
                            for c in s.json("demo/list_customers")["customers"]
                        ],
                        lambda s: [("memory/create_entities", {"entities": entities(s)})],
                    ],
                    lambda s: f"Copied {len(s.texts('demo/get_customer'))} customers into the knowledge graph.",
                ),
                CodeScript(
                    ["customer", "create entities"],
                    ["demo/list_customers", "demo/get_customer", "memory/create_entities"],
                    [program],
                    lambda out: printed(out),
                ),
                right,
                ["demo/list_customers", "demo/get_customer", "memory/create_entities"],
                ["customer", "create entities"],
            )
        ],
        reset=[("memory/delete_entities", {"entityNames": names})],
    )


def _git_fixes(data: Data) -> Workflow:
    repo = str(data.repo)
    truth = [c.number for c in data.commits if c.kind == "fix" and c.module == 3]

    def answer(seen: Seen) -> str:
        messages = [e["message"] for e in _log_entries(seen.last("git/git_log"))]
        numbers = [int(m.split()[3]) for m in messages if m.startswith("fix:") and m.endswith(" m3")]
        return f"{len(numbers)} fix commits in module m3: change numbers {sorted(numbers)}"

    program = f"""log = call_tool("git/git_log", {{"repo_path": {repo!r}, "max_count": 1000}})
messages = [line[len("Message: "):] for line in log.splitlines() if line.startswith("Message: ")]
numbers = sorted(int(m.split()[3]) for m in messages if m.startswith("fix:") and m.endswith(" m3"))
print(len(numbers), "fix commits in module m3: change numbers", numbers)"""
    return Workflow(
        "search the git log",
        [
            Question(
                f"In the git repository {repo}, which commits are fixes (`fix:`) in module m3? Give their change "
                "numbers and how many there are.",
                DirectScript(
                    [lambda _s: [("git/git_log", {"repo_path": repo, "max_count": 1000})]],
                    answer,
                    assumes="picks the m3 fixes out of 300 log entries",
                ),
                CodeScript(["git log"], ["git/git_log"], [program], printed),
                lambda a: set(truth) | {len(truth)} <= integers(a),
                ["git/git_log"],
                ["git log"],
            )
        ],
    )


def _graph_owners(data: Data) -> Workflow:
    truth = [team for team, _n in data.top_teams(3)]

    def answer(seen: Seen) -> str:
        graph = seen.json("memory/read_graph")
        counts = collections.Counter(r["to"] for r in graph["relations"] if r["relationType"] == "owned_by")
        return "Teams owning the most services: " + ", ".join(f"{t} ({n})" for t, n in counts.most_common(3))

    program = """import collections
graph = call_tool("memory/read_graph", {})
counts = collections.Counter(r["to"] for r in graph["relations"] if r["relationType"] == "owned_by")
print("teams owning the most services:", counts.most_common(3))"""
    return Workflow(
        "query the knowledge graph",
        [
            Question(
                "In the knowledge graph, which three teams own the most services (owned_by relations)?",
                DirectScript([lambda _s: [("memory/read_graph", {})]], answer, assumes="counts 100 relations by team"),
                CodeScript(["read graph"], ["memory/read_graph"], [program], printed),
                lambda a: re.findall(r"team-\d+", a)[:3] == truth,
                ["memory/read_graph"],
                ["read graph"],
            )
        ],
    )


def _expected_times(hhmm: str) -> dict[str, str]:
    today = dt.datetime.now(dt.UTC).date()
    hour, minute = map(int, hhmm.split(":"))
    utc = dt.datetime(today.year, today.month, today.day, hour, minute, tzinfo=dt.UTC)
    return {city: utc.astimezone(zoneinfo.ZoneInfo(city)).strftime("%H:%M") for city in CITIES}


def _world_clock_right(answer: str) -> bool:
    expected = _expected_times("09:30")
    lines = {city: next((line for line in answer.splitlines() if city in line), "") for city in CITIES}
    return all(expected[city] in lines[city] for city in CITIES)


def _world_clock(_data: Data) -> Workflow:
    def answer(seen: Seen) -> str:
        return "\n".join(
            f"{args['target_timezone']} {json.loads(text)['target']['datetime'][11:16]}"
            for (_name, args), text in seen.results
        )

    program = f"""def world_clock(cities, hhmm):
    times = {{}}
    for city in cities:
        answer = call_tool("time/convert_time", {{"source_timezone": "UTC", "time": hhmm, "target_timezone": city}})
        times[city] = answer["target"]["datetime"][11:16]
    return times
for city, hhmm in world_clock({CITIES!r}, "09:30").items():
    print(city, hhmm)"""
    skill = Skill(
        "world_clock",
        "world_clock",
        "world_clock(cities, hhmm) -> {city: local HH:MM} when it is hhmm UTC today",
        program,
        f"for city, hhmm in load_skill('world_clock').world_clock({CITIES!r}, '09:30').items():\n    print(city, hhmm)",
    )
    return Workflow(
        "world clock for twelve cities",
        [
            Question(
                "When it is 09:30 UTC today, what time is it in each of these places? " + ", ".join(CITIES),
                DirectScript(
                    [
                        lambda _s: [
                            ("time/convert_time", {"source_timezone": "UTC", "time": "09:30", "target_timezone": city})
                            for city in CITIES
                        ]
                    ],
                    answer,
                ),
                CodeScript(["convert time"], ["time/convert_time"], [program], printed, skill),
                _world_clock_right,
                ["time/convert_time"],
                ["convert time"],
            )
        ],
    )


def _transcript_summary(data: Data) -> Workflow:
    program = f"""text = call_tool("filesystem/read_text_file", {{"path": {data.transcript_path!r}}})["content"]
print(ask_llm("List every decision taken in this meeting transcript, one per line:\\n\\n" + text))"""
    return Workflow(
        "summarise a 20k-token transcript",
        [
            Question(
                f"Read the meeting transcript {data.transcript_path} and list the decisions taken.",
                DirectScript(
                    [lambda _s: [("filesystem/read_text_file", {"path": data.transcript_path})]],
                    lambda s: _stand_in_summary(s.last("filesystem/read_text_file")),
                ),
                CodeScript(["read text file"], ["filesystem/read_text_file"], [program], printed),
                _summary_right,
                ["filesystem/read_text_file"],
                ["read text file"],
            )
        ],
        inner=_stand_in_summary,
    )


def _transcript_copy(data: Data) -> Workflow:
    def right(_answer: str) -> bool:
        stored, _ = _graph_state(data.memory)
        return stored.get("meeting-transcript") == [data.transcript]

    program = f"""text = call_tool("filesystem/read_text_file", {{"path": {data.transcript_path!r}}})["content"]
entity = {{"name": "meeting-transcript", "entityType": "transcript", "observations": [text]}}
call_tool("memory/create_entities", {{"entities": [entity]}})
print("stored", len(text), "characters")"""
    return Workflow(
        "copy the transcript unread into the graph",
        [
            Question(
                f"Store the transcript {data.transcript_path} unchanged in the knowledge graph as entity "
                "'meeting-transcript' (type transcript), its whole text as one observation.",
                DirectScript(
                    [
                        lambda _s: [("filesystem/read_text_file", {"path": data.transcript_path})],
                        lambda s: [
                            (
                                "memory/create_entities",
                                {
                                    "entities": [
                                        {
                                            "name": "meeting-transcript",
                                            "entityType": "transcript",
                                            "observations": [s.last("filesystem/read_text_file")],
                                        }
                                    ]
                                },
                            )
                        ],
                    ],
                    lambda _s: "Stored the transcript as entity meeting-transcript.",
                    assumes="writes 20k tokens back out verbatim",
                ),
                CodeScript(
                    ["read text file", "create entities"],
                    ["filesystem/read_text_file", "memory/create_entities"],
                    [program],
                    printed,
                ),
                right,
                ["filesystem/read_text_file", "memory/create_entities"],
                ["read text file", "create entities"],
            )
        ],
        reset=[("memory/delete_entities", {"entityNames": ["meeting-transcript"]})],
    )


_RISKY = ("verify=False", "0o777", "shell=True")


def _risky_diffs(texts: list[str]) -> list[str]:
    """Stands in for a reviewer reading diffs: the added lines that weaken security, with their commit."""
    found = []
    for text in texts:
        added = [line[1:] for line in text.splitlines() if line.startswith("+") and not line.startswith("+++")]
        for line in added:
            if any(marker in line for marker in _RISKY):
                found.append(f"{text.split()[1][:10]}: adds `{line.strip()}`")
    return found


def _suspicious_commits(data: Data) -> Workflow:
    repo = str(data.repo)
    shas = [c.sha for c in data.commits]
    batches = [shas[i : i + 50] for i in range(0, len(shas), 50)]
    rounds = [lambda _s: [("git/git_log", {"repo_path": repo, "max_count": 1000})]] + [
        (lambda batch: lambda _s: [("git/git_show", {"repo_path": repo, "revision": sha}) for sha in batch])(b)
        for b in batches
    ]
    program = f"""log = call_tool("git/git_log", {{"repo_path": {repo!r}, "max_count": 1000}})
shas = [line.split()[1] for line in log.splitlines() if line.startswith("Commit: ")]
risky = ("verify=False", "0o777", "shell=True", "eval(", "pickle.loads")
for sha in shas:
    diff = call_tool("git/git_show", {{"repo_path": {repo!r}, "revision": sha}})
    added = [l[1:] for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
    for line in added:
        if any(r in line for r in risky):
            print(sha[:10], "adds:", line.strip())"""

    def explain(outputs: list[str]) -> str:
        return "Suspicious commits:\n" + "\n".join(f"- {line}" for line in printed(outputs).splitlines())

    return Workflow(
        "find three suspicious commits",
        [
            Question(
                f"Find the three commits in {repo} whose changes weaken security and explain each diff.",
                DirectScript(
                    rounds,
                    lambda s: "Suspicious commits:\n" + "\n".join(_risky_diffs(s.texts("git/git_show"))),
                    assumes="spots 3 risky lines in 300 diffs",
                ),
                CodeScript(["git log", "git show"], ["git/git_log", "git/git_show"], [program], explain),
                lambda a: all(sha[:10] in a for sha in data.risky) and all(r in a for r in _RISKY),
                ["git/git_log", "git/git_show"],
                ["git log", "git show"],
            )
        ],
    )


def _annotations(data: Data, one_call_each: bool) -> Workflow:
    def right(_answer: str) -> bool:
        stored, _ = _graph_state(data.memory)
        return all(f"owned by {team}" in stored.get(service, []) for service, team in data.owners.items())

    def observations(seen: Seen) -> list[dict[str, Any]]:
        graph = seen.json("memory/read_graph")
        return [
            {"entityName": r["from"], "contents": [f"owned by {r['to']}"]}
            for r in graph["relations"]
            if r["relationType"] == "owned_by"
        ]

    if one_call_each:
        write = lambda s: [("memory/add_observations", {"observations": [o]}) for o in observations(s)]  # noqa: E731
        call = """for o in observations:
    call_tool("memory/add_observations", {"observations": [o]})"""
    else:
        write = lambda s: [("memory/add_observations", {"observations": observations(s)})]  # noqa: E731
        call = 'call_tool("memory/add_observations", {"observations": observations})'
    program = f"""graph = call_tool("memory/read_graph", {{}})
observations = [{{"entityName": r["from"], "contents": [f"owned by {{r['to']}}"]}}
                for r in graph["relations"] if r["relationType"] == "owned_by"]
{call}
print("annotated", len(observations), "services")"""
    how = " Use one add_observations call per service." if one_call_each else ""
    return Workflow(
        "annotate 100 entities" + (", one call each" if one_call_each else ""),
        [
            Question(
                "Add to every service in the knowledge graph the observation 'owned by <team>', from its owned_by "
                "relation." + how,
                DirectScript(
                    [lambda _s: [("memory/read_graph", {})], write],
                    lambda s: f"Annotated {len(observations(s))} services.",
                ),
                CodeScript(
                    ["read graph", "add observations"],
                    ["memory/read_graph", "memory/add_observations"],
                    [program],
                    printed,
                ),
                right,
                ["memory/read_graph", "memory/add_observations"],
                ["read graph", "add observations"],
            )
        ],
        reset=[
            (
                "memory/delete_observations",
                {"deletions": [{"entityName": s, "observations": [f"owned by {t}"]} for s, t in data.owners.items()]},
            )
        ],
    )


def _within_minutes(answer: str, zone: str, minutes: int = 3) -> bool:
    now = dt.datetime.now(zoneinfo.ZoneInfo(zone))
    for hour, minute in _HHMM.findall(answer):
        said = now.replace(hour=int(hour), minute=int(minute))
        if abs((said - now).total_seconds()) <= minutes * 60:
            return True
    return False


def _lookup(_data: Data) -> Workflow:
    program = """now = call_tool("time/get_current_time", {"timezone": "Asia/Tokyo"})
print("It is", now["datetime"][11:16], "in Tokyo,", now["day_of_week"])"""
    return Workflow(
        "trivial lookup",
        [
            Question(
                "What time is it in Tokyo right now?",
                DirectScript(
                    [lambda _s: [("time/get_current_time", {"timezone": "Asia/Tokyo"})]],
                    lambda s: f"It is {s.json('time/get_current_time')['datetime'][11:16]} in Tokyo.",
                ),
                CodeScript(
                    ["current time"],
                    ["time/get_current_time"],
                    [program],
                    printed,
                ),
                lambda a: _within_minutes(a, "Asia/Tokyo"),
                ["time/get_current_time"],
                ["current time"],
            )
        ],
    )


def _error_recovery(data: Data) -> Workflow:
    repo = str(data.repo)
    truth = data.busiest_weekday()

    def busiest(seen: Seen) -> str:
        days = collections.Counter(
            dt.datetime.fromisoformat(e["date"]).strftime("%A") for e in _log_entries(seen.last("git/git_log"))
        )
        return f"Most commits were made on a {days.most_common(1)[0][0]} ({days.most_common(1)[0][1]})."

    guess = f"""import collections, datetime
log = call_tool("git/git_log", {{"repo_path": {repo!r}, "max_count": 1000}})
days = collections.Counter(datetime.datetime.fromisoformat(c["date"]).strftime("%A") for c in log)
print(days.most_common(3))"""
    look = "print(type(log).__name__, repr(log[:300]))"
    fixed = """dates = [line[len("Date: "):] for line in log.splitlines() if line.startswith("Date: ")]
days = collections.Counter(datetime.datetime.fromisoformat(d).strftime("%A") for d in dates)
print(len(dates), "commits; busiest weekdays:", days.most_common(3))"""
    return Workflow(
        "error recovery on an undocumented result",
        [
            Question(
                f"On which weekday were the most commits made in the repository {repo}?",
                DirectScript(
                    [lambda _s: [("git/git_log", {"repo_path": repo, "max_count": 1000})]],
                    busiest,
                    assumes="works out the weekday of 300 dates",
                ),
                CodeScript(
                    ["git log"],
                    ["git/git_log"],
                    [guess, look, fixed],
                    lambda out: f"The busiest weekday: {printed(out)}",
                    looks=frozenset({1}),  # the look at the result's shape; the guess and the fix mean to answer
                ),
                lambda a: (
                    next(iter(re.findall(r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday", a)), "") == truth
                ),
                ["git/git_log"],
                ["git log"],
            )
        ],
    )


def _session(data: Data) -> Workflow:
    """Ten questions on one repository, in one conversation: each mode keeps what it was shown."""
    repo = str(data.repo)
    commits = data.commits
    log_call = ("git/git_log", {"repo_path": repo, "max_count": 1000})
    # The first question fetches and parses the log; later ones reuse `entries` (a session keeps its variables).
    fetch = f'log = call_tool("git/git_log", {{"repo_path": {repo!r}, "max_count": 1000}})\n'
    entries = 'entries = [dict(l.split(": ", 1) for l in block.strip().splitlines() if ": " in l) for block in log.split("\\n\\n") if "Commit: " in block]\n'  # noqa: E501
    first = fetch + entries
    by_number = {c.number: c for c in commits}
    module_fixes = collections.Counter(c.module for c in commits if c.kind == "fix")
    top_fix = max(module_fixes.values())

    def q(
        prompt: str,
        direct_rounds: list[Any],
        direct_answer: Any,
        code: str,
        check: Any,
        assumes: str | None,
        needs: list[str],
    ) -> Question:
        return Question(
            prompt,
            DirectScript(direct_rounds, direct_answer, assumes),
            CodeScript(["git log", "git show"], ["git/git_log", "git/git_show"], [code], printed),
            check,
            needs,
            ["git log", "git show"] if "git/git_show" in needs else ["git log"],
        )

    def log(seen: Seen) -> list[dict[str, str]]:
        return _log_entries(seen.last("git/git_log"))

    first_round = [lambda _s: [log_call]]
    show = lambda sha: [lambda _s: [("git/git_show", {"repo_path": repo, "revision": sha})]]  # noqa: E731
    return Workflow(
        "10-question session on one repository",
        [
            q(
                f"How many commits does the repository {repo} have?",
                first_round,
                lambda s: f"{len(log(s))} commits.",
                first + "print(len(entries), 'commits')",
                lambda a: len(commits) in integers(a),
                "counts 300 entries",
                ["git/git_log"],
            ),
            q(
                "What is the message of the latest commit?",
                [],
                lambda s: log(s)[0]["message"],
                "print(entries[0]['Message'])",
                lambda a: commits[-1].message in a,
                None,
                [],
            ),
            q(
                "How many feat commits are there?",
                [],
                lambda s: f"{sum(e['message'].startswith('feat:') for e in log(s))} feat commits.",
                "print(sum(e['Message'].startswith('feat:') for e in entries), 'feat commits')",
                lambda a: sum(c.kind == "feat" for c in commits) in integers(a),
                "counts 300 entries",
                [],
            ),
            q(
                "Which module has the most fix commits?",
                [],
                lambda s: "Module m{} has the most.".format(
                    collections.Counter(
                        e["message"].split()[-1][1:] for e in log(s) if e["message"].startswith("fix:")
                    ).most_common(1)[0][0]
                ),
                "import collections\nprint(collections.Counter(e['Message'].split()[-1] for e in entries if e['Message'].startswith('fix:')).most_common(2))",  # noqa: E501
                lambda a: any(module_fixes[int(m)] == top_fix for m in re.findall(r"\bm(\d+)\b", a)[:1]),
                "counts 300 entries",
                [],
            ),
            q(
                "On what date was change number 150 committed?",
                [],
                lambda s: next(e["date"][:10] for e in log(s) if e["message"].split()[3] == "150"),
                "print(next(e['Date'] for e in entries if e['Message'].split()[3] == '150'))",
                lambda a: by_number[150].date.strftime("%Y-%m-%d") in a,
                None,
                [],
            ),
            q(
                "Which file did the latest commit change?",
                show("HEAD"),
                lambda s: re.findall(r"\+\+\+ b/(\S+)", s.last("git/git_show"))[0],
                f'diff = call_tool("git/git_show", {{"repo_path": {repo!r}, "revision": "HEAD"}})\nprint([l for l in diff.splitlines() if l.startswith("+++")])',  # noqa: E501
                lambda a: f"m{commits[-1].module}.py" in a,
                None,
                ["git/git_show"],
            ),
            q(
                "How many commits touched module m16?",
                [],
                lambda s: f"{sum(e['message'].endswith(' m16') for e in log(s))} commits.",
                "print(sum(e['Message'].endswith(' m16') for e in entries))",
                lambda a: sum(c.module == 16 for c in commits) in integers(a),
                "counts 300 entries",
                [],
            ),
            q(
                "Who authored the first commit?",
                [],
                lambda s: log(s)[-1]["author"],
                "print(entries[-1]['Author'])",
                lambda a: "Bench" in a,
                None,
                [],
            ),
            q(
                "What line did change number 42 add?",
                show(by_number[42].sha),
                lambda s: next(x for x in s.last("git/git_show").splitlines() if x.startswith("+") and "+++" not in x),
                f'sha = next(e["Commit"] for e in entries if e["Message"].split()[3] == "42")\ndiff = call_tool("git/git_show", {{"repo_path": {repo!r}, "revision": sha}})\nprint([l for l in diff.splitlines() if l.startswith("+") and "+++" not in l])',  # noqa: E501
                lambda a: "value_42 = 42" in a,
                None,
                ["git/git_show"],
            ),
            q(
                "How many docs commits are there in module m5?",
                [],
                lambda s: f"{sum(e['message'].startswith('docs:') and e['message'].endswith(' m5') for e in log(s))}.",
                "print(sum(e['Message'].startswith('docs:') and e['Message'].endswith(' m5') for e in entries))",
                lambda a: sum(c.kind == "docs" and c.module == 5 for c in commits) in integers(a),
                "counts 300 entries",
                [],
            ),
        ],
    )


def workflows(data: Data) -> list[Workflow]:
    return [
        _sales(data),
        _customers(data),
        _git_fixes(data),
        _graph_owners(data),
        _world_clock(data),
        _transcript_summary(data),
        _transcript_copy(data),
        _suspicious_commits(data),
        _annotations(data, one_call_each=False),
        _annotations(data, one_call_each=True),
        _lookup(data),
        _session(data),
        _error_recovery(data),
    ]


def sanity(data: Data) -> None:
    """The data holds what the questions ask about (the risky lines, the decisions)."""
    assert len(data.risky) == len(RISKY_LINES) and all(d in data.transcript for d in DECISIONS)
