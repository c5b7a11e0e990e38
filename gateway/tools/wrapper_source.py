"""Python wrapper source for a server's tools: one typed function per tool, docstring from its schemas (what it
takes, and what it returns when the server declares an outputSchema); and the one-line-per-tool call signature that
`search_tools(detail="signature")` answers with, so that a search is all the discovery a task needs.

The sandbox stores the module as `servers/<server_py>/__init__.py`; each function calls the runtime's
`call_tool("<server>/<tool>", arguments)` (docs/contracts.md) and drops arguments left at None.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import mcp_types as types

from runtime.contract import python_identifier

_JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
    "object": "dict[str, Any]",
    "array": "list[Any]",
}


def annotation(schema: Any) -> str:
    """A Python type for a JSON schema; anything it cannot express becomes `Any`."""
    if not isinstance(schema, dict):
        return "Any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str | int | bool) or v is None for v in enum):
        return f"Literal[{', '.join(repr(v) for v in enum)}]"
    if "const" in schema and isinstance(schema["const"], str | int | bool):
        return f"Literal[{schema['const']!r}]"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _union([annotation(s) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([annotation({**schema, "type": k}) for k in kind])
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list[{annotation(schema['items'])}]"
    return _JSON_TYPES.get(kind, "Any") if isinstance(kind, str) else "Any"


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(p for part in parts for p in part.split(" | ")))
    return "Any" if "Any" in unique else " | ".join(unique)


def _doc_line(text: str) -> str:
    """One line of docstring that cannot end its literal, whatever a server wrote: backslashes and quotes are
    escaped, anything unprintable (NUL, controls, lone surrogates) is written as an escape."""
    return "".join(_doc_char(ch) for ch in " ".join(text.split()))


def _doc_char(ch: str) -> str:
    if ch == '"':
        return '\\"'
    if ch == "\\" or not ch.isprintable():
        return ch.encode("unicode_escape").decode("ascii")
    return ch


def _parameters(tool: types.Tool) -> list[tuple[str, str, Any, bool]]:
    """(python name, json name, property schema, required) per argument, required ones first."""
    schema = tool.input_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    used: set[str] = {"arguments"}
    params: list[tuple[str, str, Any, bool]] = []
    for json_name, prop in properties.items():
        pname = python_identifier(json_name)
        while pname in used:
            pname += "_"
        used.add(pname)
        params.append((pname, json_name, prop, json_name in required))
    params.sort(key=lambda p: not p[3])
    return params


def shape(schema: Any, root: Any = None, depth: int = 2) -> str:
    """A compact picture of a JSON schema, objects by their fields: `{content: str}`, `list[{name: str}]`; local
    `$ref`s (`#/$defs/...`) are followed within `root` (the whole schema). `Any` where the schema says nothing."""
    if not isinstance(schema, dict):
        return "Any"
    root = schema if root is None else root
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/"):
        target: Any = root
        for part in reference[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return shape(target, root, depth - 1) if depth > 0 else "dict"
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        if depth <= 0:
            return "dict"
        return "{" + ", ".join(f"{key}: {shape(value, root, depth - 1)}" for key, value in properties.items()) + "}"
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return f"list[{shape(schema['items'], root, depth)}]"
    return annotation(schema)


def returns(tool: types.Tool) -> str:
    """What a call returns: the shape of its outputSchema (call_tool gives structuredContent then), else `Any` (its
    text content)."""
    return shape(tool.output_schema) if tool.output_schema else "Any"


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)\.\s")


def _first_sentence(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    end = _SENTENCE_END.search(line)
    line = line if end is None else line[: end.start() + 1]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def signature(server: str, tool: types.Tool) -> str:
    """What `search_tools(detail="signature")` shows of a tool, enough to call it without `get_tool`: the call with
    typed arguments (optional ones `=None`), what it returns, its description's first sentence, and each argument's
    description where the schema gives one."""
    params = _parameters(tool)
    args = ", ".join(
        f"{json_name}: {shape(prop, tool.input_schema)}" + ("" if is_required else "=None")
        for _pname, json_name, prop, is_required in params
    )
    lines = [f"{server}/{tool.name}({args}) -> {returns(tool)}"]
    if tool.description:
        lines.append("  " + _first_sentence(tool.description))
    for _pname, json_name, prop, _req in params:
        described = prop.get("description") if isinstance(prop, dict) else None
        if isinstance(described, str) and described.strip():
            lines.append(f"  {json_name}: {_first_sentence(described, 120)}")
    return "\n".join(lines)


def _function(server: str, tool: types.Tool, fname: str) -> str:
    params = _parameters(tool)
    signature = []
    for pname, _json, prop, is_required in params:
        hint = annotation(prop)
        signature.append(f"{pname}: {hint}" if is_required else f"{pname}: {_union([hint, 'None'])} = None")
    doc = [_doc_line(tool.description or f"Call {server}/{tool.name}.")]
    if params:
        doc += ["", "Args:"]
        for pname, _json, prop, _req in params:
            description = _doc_line(prop.get("description", "")) if isinstance(prop, dict) else ""
            doc.append(f"    {pname}: {description}".rstrip())
    doc += ["", f"Returns: {_doc_line(returns(tool))}"]
    body = ["arguments: dict[str, Any] = {}"]
    for pname, json_name, _prop, _req in params:
        body += [f"if {pname} is not None:", f"    arguments[{json_name!r}] = {pname}"]
    body.append(f"return call_tool({f'{server}/{tool.name}'!r}, arguments)")
    args = f"*, {', '.join(signature)}" if signature else ""
    docstring = '"""' + "\n".join(doc) + "\n" + '"""'
    return f"def {fname}({args}) -> Any:\n" + textwrap.indent(docstring + "\n" + "\n".join(body), "    ") + "\n"


def wrapper_module(server: str, tools: list[types.Tool]) -> str:
    """Source of `servers.<server_py>`: importable, typed, one keyword-only function per tool."""
    header = [
        f'"""Tools of MCP server {server!r}, generated by the mcpexec gateway from their input schemas."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Literal",
        "",
        "from runtime.client import call_tool",
        "",
        "__all__ = [{}]",
    ]
    functions, names = [], []
    used: set[str] = {"call_tool", "Any", "Literal", "annotations"}
    for tool in sorted(tools, key=lambda t: t.name):
        fname = python_identifier(tool.name)
        while fname in used:
            fname += "_"
        used.add(fname)
        names.append(fname)
        functions.append(_function(server, tool, fname))
    header[-1] = f"__all__ = [{', '.join(repr(n) for n in names)}]"
    return "\n".join(header) + "\n\n\n" + "\n\n".join(functions)
