"""Generated wrapper modules compile whatever a server puts in its tool names, descriptions and schemas: a
hostile or careless server must not break the module (and so every tool of the server) or inject code."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.tools.wrapper_source import wrapper_module

HOSTILE = [
    'ends in a quote"',
    'three """ quotes """',
    "a backslash \\",
    "trailing backslash\\",
    "NUL \x00 byte",
    "lone surrogate \ud800",
    '"""); import os; os.system("id"); ("""',
    "\\N{BULLET} \\x41",
]


def _compiles(server: str, tools: list[types.Tool]) -> dict[str, Any]:
    source = wrapper_module(server, tools)
    source.encode("utf-8")  # the sandbox writes it as UTF-8: a lone surrogate must not reach the text
    namespace: dict[str, Any] = {}
    exec(compile(source, "<wrappers>", "exec"), namespace)
    return namespace


def test_hostile_descriptions_stay_text() -> None:
    tools = [
        types.Tool(
            name=f"tool{i}",
            description=text,
            input_schema={"type": "object", "properties": {"q": {"type": "string", "description": text}}},
        )
        for i, text in enumerate(HOSTILE)
    ]
    namespace = _compiles("srv", tools)
    assert "os" not in namespace  # the injected import did not run: the text stayed inside the docstring
    assert namespace["tool0"].__doc__.startswith('ends in a quote"')
    assert namespace["tool1"].__doc__.startswith('three """ quotes """')
    assert namespace["tool6"].__doc__.startswith('"""); import os; os.system("id"); ("""')


_text = st.text(max_size=40)
_schema = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(
            _text,
            st.fixed_dictionaries(
                {},
                optional={
                    "type": st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null"]),
                    "description": _text,
                    "enum": st.lists(st.one_of(_text, st.integers(), st.booleans(), st.none()), max_size=4),
                    "const": st.one_of(_text, st.integers()),
                },
            ),
            max_size=5,
        ),
        "required": st.lists(_text, max_size=3),
    },
)


@settings(max_examples=300, deadline=None)
@given(
    server=_text,
    tools=st.lists(
        st.builds(
            lambda name, description, schema: types.Tool(name=name, description=description, input_schema=schema),
            _text,
            st.one_of(st.none(), _text),
            _schema,
        ),
        max_size=5,
    ),
)
def test_any_names_descriptions_and_schemas_compile(server: str, tools: list[types.Tool]) -> None:
    _compiles(server, tools)
