"""Schema errors of a tool call: they name places in the caller's own (tokenized) arguments, never a value the
vault put there."""

from __future__ import annotations

import jsonschema

from gateway.tools.calls import _schema_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        "rows": {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "integer"}}},
    },
}


def test_schema_errors_name_the_tokenized_keys() -> None:
    shown = {"tags": {"[EMAIL_1]x": 5, "o'[EMAIL_2]": 6}, "rows": [{"[PHONE_1]": "one"}]}
    real = {
        "tags": {"ana@example.orgx": 5, "o'bo@example.org": 6},
        "rows": [{"+1 202-555-0143": "one"}],
    }
    problems = _schema_errors(jsonschema.Draft202012Validator(SCHEMA), real, shown)
    text = "; ".join(problems)
    assert len(problems) == 3
    assert '$.tags["[EMAIL_1]x"]: fails' in text and '$.tags["o\'[EMAIL_2]"]: fails' in text
    assert '$.rows[0]["[PHONE_1]"]: fails' in text
    assert "example.org" not in text and "555" not in text
