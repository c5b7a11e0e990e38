"""The bounded stdio transport's reading of a cut line: which request it answers, read from its two ends."""

from __future__ import annotations

import pytest

from gateway.upstreams.stdio import answered_id


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"jsonrpc":"2.0","id":7,"result":{}}', 7),
        ('{ "jsonrpc": "2.0", "id": 7, "error": {"code": 1, "message": "x"} }', 7),
        ('{"result":{"content":[]},"jsonrpc":"2.0","id":12}', 12),
        ('{"error":{"code":1,"message":"x"},"jsonrpc":"2.0","id":3}\r', 3),
        ('{"result":{"nested":{"id":5}}}', None),  # the last id is not the object's own
        ('{"result":{"text":"\\"id\\":5}"},"jsonrpc":"2.0"}', None),
        ('{"method":"sampling/createMessage","params":{},"jsonrpc":"2.0","id":4}', None),  # a request, not an answer
        ('{"jsonrpc":"2.0","id":4,"method":"roots/list"}', None),
        ('{"jsonrpc":"2.0","method":"notifications/message","params":{"id":9}}', None),
    ],
)
def test_the_request_a_cut_line_answers_is_read_from_its_ends(line: str, expected: int | None) -> None:
    data = line.encode()
    assert answered_id(data[:256], data[-256:]) == expected
