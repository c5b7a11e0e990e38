"""Skills: a function saved with its SKILL.md under the skills dir, listed and loaded by a later run."""

from __future__ import annotations

import json

from tests.integration.runtime.conftest import RuntimeHarness

SAVE = '''
def customer_cities(plan):
    """Cities of the customers on one plan."""
    return sorted(c["city"] for c in call_tool("demo/list_customers", {"plan": plan})["customers"])

print(save_skill("customer_cities", customer_cities, "Cities of the customers on a plan.\\nUses demo/list_customers."))
for bad in ["../escape", "Upper", ""]:
    try:
        save_skill(bad, "x = 1", "bad")
    except ValueError:
        print("refused", repr(bad))
try:
    save_skill("broken", "def f(:", "does not parse")
except SyntaxError:
    print("refused broken source")
'''

REUSE = """
import json
skill = load_skill("customer_cities")
try:
    load_skill("absent")
except LookupError as exc:
    missing = str(exc)
print(json.dumps({"skills": list_skills(), "team": skill.customer_cities("team"), "missing": missing}))
"""


def test_a_skill_saved_in_one_run_is_listed_and_loaded_in_the_next(harness: RuntimeHarness) -> None:
    saved = harness.run(harness.task("save", code=SAVE))
    assert saved.exit_code == 0, saved.result
    assert saved.result["result"].count("refused") == 4
    folder = harness.root / "skills" / "customer_cities"
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md", "skill.py"]
    assert (folder / "SKILL.md").read_text().startswith("# customer_cities\n\nCities of the customers on a plan.")
    assert "def customer_cities(plan):" in (folder / "skill.py").read_text()
    assert not (harness.root / "escape").exists() and not (harness.root / "skills" / "broken").exists()

    reused = harness.run(harness.task("reuse", code=REUSE))
    assert reused.exit_code == 0, reused.result
    seen = json.loads(reused.result["result"])
    assert seen["skills"] == [{"name": "customer_cities", "description": "Cities of the customers on a plan."}]
    assert seen["team"] == sorted(seen["team"]) and len(seen["team"]) == 2
    assert "no skill named 'absent'" in seen["missing"]
    assert reused.result["usage"]["toolCalls"] == 1, "the skill's own tool call goes through the gateway"
