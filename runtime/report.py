"""The task's result, reported to the gateway ahead of the termination message (docs/contracts.md).

In a cluster the termination message reaches the operator only once the pod has exited and its kubelet has said so,
seconds later. The runtime first posts the same bounded document to the gateway, which records it in the task's
status at once. The post is best effort: sent once (never again once it may have arrived), briefly waited for, and
any failure (the gateway away or refusing) is said on stderr and otherwise ignored, since the termination message,
always written after it, carries the same result.
"""

from __future__ import annotations

import sys

from runtime import client
from runtime.contract import RESULT_REPORT_PATH
from runtime.result import Result

# How long the report may hold up the termination message: connecting (nothing sent), then each read of the answer
# (the gateway bounds its own write to the API server well under this).
CONNECT_SECONDS = 2.0
ANSWER_SECONDS = 10.0


def report(result: Result) -> None:
    """Post the result's termination-message document to the gateway, once; a failure is only said."""
    try:
        client.gateway().post_once(RESULT_REPORT_PATH, result.encode().encode(), CONNECT_SECONDS, ANSWER_SECONDS)
    except (client.ToolError, OSError, RuntimeError) as exc:  # RuntimeError, OSError: no credential to send
        sys.stderr.write(f"runtime: result not reported to the gateway ({exc}); the termination message has it.\n")
