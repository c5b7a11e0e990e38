"""The YAML files a user hands `mcpexec run` (the task, the servers file), read as the API server would take them.

kubectl and the API server refuse a key given twice, and etcd holds at most about 1.5 MB an object; PyYAML alone
keeps the last of two keys silently, reads any size whole, and fails with a traceback on bytes that are not
UTF-8 or on nesting deep enough to exhaust the interpreter's stack. Every one of these is a clear error here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

# Larger than any AgentTask or servers file a person writes, smaller than what etcd would store.
MAX_FILE_BYTES = 1 << 20


class YamlFileError(ValueError):
    """The file cannot be taken as given: the message says why."""


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML that refuses a key twice in one mapping (PyYAML would keep the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = Counter(str(self.construct_object(key, deep=deep)) for key, _ in node.value)
        twice = sorted(key for key, count in keys.items() if count > 1)
        if twice:
            raise yaml.constructor.ConstructorError(None, None, f"keys given twice: {twice}", node.start_mark)
        return super().construct_mapping(node, deep)


def load_documents(path: Path) -> list[Any]:
    """The non-empty YAML documents of `path`; OSError if it cannot be read, YamlFileError for the rest."""
    with path.open("rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise YamlFileError(f"{path} is over {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    try:
        return [document for document in yaml.load_all(text, Loader=UniqueKeyLoader) if document]
    except yaml.YAMLError as exc:
        raise YamlFileError(f"{path} is not valid YAML: {exc}") from None
    except RecursionError:
        raise YamlFileError(f"{path} is nested too deeply") from None
