"""What the sandbox wrote, made safe for the user's terminal.

A task's result is text the task's code chose: escape sequences in it would set the terminal's title, write
the clipboard (OSC 52), move the cursor over earlier lines or forge a status line. On a terminal every
control character but newline and tab is shown as an escape instead, and so are the bidirectional overrides
that reorder what is displayed.
"""

from __future__ import annotations

import re

_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_CONTROLS}]")


def neutralised(text: str) -> str:
    """`text` with each control character (C0 but newline and tab, DEL, C1, bidi controls) written as an escape."""
    return _UNSAFE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)
