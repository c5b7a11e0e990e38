"""The arguments' shortcut never accepts what jsonschema refuses: both judge generated schemas (flat ones it takes on,
and ones it must leave to jsonschema) and arguments, hostile ones included."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.tools.arguments_check import ArgumentsCheck

TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]
NAMES = st.sampled_from(["path", "head", "tail", "message", "", "__proto__", "constructor", "a.b", "ключ", "$ref"])
DRAFTS = st.sampled_from(
    [
        None,
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ]
)
# Keywords the shortcut leaves to jsonschema, with values that constrain.
OTHER_KEYWORDS = st.sampled_from(
    [
        ("minLength", 3),
        ("maximum", 5),
        ("enum", ["a", 1, None]),
        ("format", "uri"),
        ("pattern", "^a"),
        ("items", {"type": "integer"}),
        ("additionalProperties", {"type": "string"}),
        ("const", 1),
    ]
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, 1, 1.0, -0.0, 2.5, True, False, "", "1", "true", "null"])
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(NAMES, children, max_size=3),
    max_leaves=8,
)


@st.composite
def property_schemas(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["typed", "typed", "list", "true", "false", "empty", "annotated", "other"]))
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind == "empty":
        return {}
    schema: dict[str, Any] = {"description": "d"} if kind == "annotated" else {}
    if kind in ("typed", "annotated", "other"):
        schema["type"] = draw(st.sampled_from([*TYPES, "bogus"]))
    if kind == "list":
        schema["type"] = draw(st.lists(st.sampled_from(TYPES), min_size=0, max_size=3))
    if kind == "other":
        key, value = draw(OTHER_KEYWORDS)
        schema[key] = value
    return schema


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": draw(st.sampled_from(["object", "object", "object", "array", ["object"]]))}
    if (draft := draw(DRAFTS)) is not None:
        schema["$schema"] = draft
    schema["properties"] = draw(st.dictionaries(NAMES, property_schemas(), max_size=4))
    if draw(st.booleans()):
        schema["required"] = draw(st.lists(NAMES, max_size=3, unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    if draw(st.integers(0, 4)) == 0:
        key, value = draw(OTHER_KEYWORDS)
        schema[key] = value
    if draw(st.integers(0, 8)) == 0:
        schema["required"] = "path"  # sloppy: jsonschema falls back to validating what it can
    return schema


@st.composite
def arguments_for(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """Mostly the schema's own names, some of them missing, with any values."""
    names = [*schema.get("properties", {}), *schema.get("required", [])] if isinstance(schema, dict) else []
    own = bool(names) and draw(st.booleans())
    keys = draw(st.lists(st.sampled_from(names) if own else NAMES, max_size=4))
    return {key: draw(JSON) for key in keys}


def _jsonschema_accepts(check: ArgumentsCheck, arguments: dict[str, Any]) -> bool:
    return not list(check.validator.iter_errors(arguments))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_never_accepts_what_jsonschema_refuses(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    check = ArgumentsCheck(schema)
    for _ in range(5):
        arguments = data.draw(arguments_for(schema))
        if check.surely_valid(arguments):
            assert _jsonschema_accepts(check, arguments), (schema, arguments)


def test_it_answers_for_the_common_tools() -> None:
    """The shortcut is taken for flat schemas like the reference servers' (else it saves nothing)."""
    read_text_file = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "tail": {"description": "the last N lines", "type": "number"},
            "head": {"description": "the first N lines", "type": "number"},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    check = ArgumentsCheck(read_text_file)
    assert check.surely_valid({"path": "/a"}) and check.surely_valid({"path": "/a", "head": 3, "tail": 2.5})
    for refused in ({}, {"path": 1}, {"path": "/a", "head": True}, {"path": "/a", "other": 1}, {"path": None}):
        assert not check.surely_valid(refused)
        assert not _jsonschema_accepts(check, refused)
    assert ArgumentsCheck({"type": "object", "properties": {"n": {"type": "integer"}}}).surely_valid({"n": 2**80})


def test_what_it_cannot_judge_is_left_to_jsonschema() -> None:
    integer = ArgumentsCheck({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert not integer.surely_valid({"n": 1.0}) and _jsonschema_accepts(integer, {"n": 1.0})
    for schema in (
        {"type": "object", "properties": {"n": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "string"}}},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {}},
        {"type": "object", "required": "n"},
    ):
        assert not ArgumentsCheck(schema).surely_valid({"n": "x"})
