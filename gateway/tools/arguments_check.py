"""A tool's arguments against its inputSchema: jsonschema's validator, built once per schema, and for the flat schemas
most tools have (an object of typed properties, some required) an exact shortcut that only ever says "valid".

jsonschema walks its keywords for every call: about 40 us for a one-property schema, a tenth of what the gateway adds
to a cheap call (make bench gateway_overhead). The shortcut answers for the schemas it fully understands and the
arguments it can judge with certainty; for anything else (another keyword, a float where an integer is asked, an
argument that fails) jsonschema decides, so no argument is ever accepted that jsonschema refuses
(tests/unit/gateway/tools/test_arguments_check.py compares both on generated schemas and arguments).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator

# Keywords that never make an argument invalid (jsonschema asserts no `format` unless given a format checker, and is
# not given one; `format` is still left to it, in case it ever is).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"})
_TOP_LEVEL = _ANNOTATIONS | {"$schema", "type", "properties", "required", "additionalProperties"}
# Drafts whose `type`, `properties` and `required` mean what the shortcut checks (draft 4 and 3 read `integer` and
# `required` otherwise).
_DRAFTS = (
    jsonschema.Draft6Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft202012Validator,
)


def _is_string(value: object) -> bool:
    return isinstance(value, str)


def _is_integer(value: object) -> bool:
    # A float such as 1.0 is an integer to jsonschema's drafts 6 and later: not judged here, jsonschema decides.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_boolean(value: object) -> bool:
    return isinstance(value, bool)


def _is_null(value: object) -> bool:
    return value is None


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_array(value: object) -> bool:
    return isinstance(value, list)


_TYPES: dict[str, Callable[[object], bool]] = {
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
    "null": _is_null,
    "object": _is_object,
    "array": _is_array,
}
_ANY = (lambda _value: True,)  # a property schema that is `true` or holds annotations only


def _type_checks(schema: object) -> tuple[Callable[[object], bool], ...] | None:
    """A property schema's test, one check per allowed type (any may pass); None when the shortcut cannot judge it."""
    if schema is True:
        return _ANY
    if not isinstance(schema, dict) or not set(schema) <= _ANNOTATIONS | {"type"}:
        return None
    if "type" not in schema:
        return _ANY
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if not names or not all(isinstance(name, str) and name in _TYPES for name in names):
        return None
    return tuple(_TYPES[name] for name in names)


class _Flat:
    """The shortcut for one flat schema: `type: object`, typed `properties`, `required`, `additionalProperties`
    true or false."""

    def __init__(self, properties: dict[str, tuple[Callable[[object], bool], ...]], required: list[str], closed: bool):
        self._properties = properties
        self._required = required
        self._closed = closed

    def surely_valid(self, arguments: Mapping[str, Any]) -> bool:
        if not isinstance(arguments, dict) or not all(name in arguments for name in self._required):
            return False
        for name, value in arguments.items():
            checks = self._properties.get(name)
            if checks is None:
                if self._closed:
                    return False
            elif not any(check(value) for check in checks):
                return False
        return True

    @classmethod
    def of(cls, schema: Mapping[str, Any]) -> _Flat | None:
        """The shortcut of a schema it fully understands, else None."""
        if not set(schema) <= _TOP_LEVEL or schema.get("type") != "object":
            return None
        properties, required = schema.get("properties", {}), schema.get("required", [])
        additional = schema.get("additionalProperties", True)
        if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(additional, bool):
            return None
        if not all(isinstance(name, str) for name in required):
            return None
        checks = {name: _type_checks(sub) for name, sub in properties.items()}
        known = {name: check for name, check in checks.items() if check is not None}
        if len(known) != len(checks):
            return None
        return cls(known, list(required), closed=not additional)


class ArgumentsCheck:
    """The compiled check of one inputSchema."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except SchemaError:
            cls = jsonschema.Draft202012Validator  # a sloppy server schema: validate what we can
            self._flat = None
        else:
            self._flat = _Flat.of(schema) if cls in _DRAFTS else None
        self.validator: Validator = cls(schema)

    def surely_valid(self, arguments: Mapping[str, Any]) -> bool:
        """True only for arguments jsonschema accepts; False when jsonschema is to judge them (`validator`)."""
        return self._flat is not None and self._flat.surely_valid(arguments)
