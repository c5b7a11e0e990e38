"""Email addresses, found at their at-sign: `@`, form-encoded `%40` or JSON-escaped `\\u0040`.

The local part is read backwards from the at-sign (a regex over the reversed text just before it), so the scan
never starts a match at every letter of the text. Its characters are ASCII and Latin letters, digits and `._+'-`:
CJK text written right against an address (`メールアドレスはchloe.wang@gmail.comです`) is not part of it, an
apostrophe is (`o'connor@...`), and so are form-encoded `%2B` (+) and `%27` (') in a form-encoded address. What
precedes it may be an escape whose letter looks like the address's first (`\\nana@x.com`: the address is
`ana@x.com`), or a percent-escape (`%3Cana@x.com`).
"""

from __future__ import annotations

import re

_LETTERS = "A-Za-z0-9\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_PLAIN_LOCAL = re.compile(rf"[{_LETTERS}._+'-]{{1,64}}")
# Reversed form-encoded local part: `%2B` and `%27` read backwards.
_ENCODED_LOCAL = re.compile(r"(?:[Bb]2%|72%|[A-Za-z0-9._-]){1,64}")
_LEADING = re.compile(r"(?:[.'+]|%2[Bb]|%27)+")
_ESCAPE = re.compile(r"u[0-9A-Fa-f]{4}|[nrtbf]")
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")
# Labels then a top-level domain of letters (or punycode): `@here` is a mention, `@2.0.1` a version. The labels are
# atomic, so finding the last one backtracks once per label.
DOMAIN = rf"[{_LETTERS}-]++(?:\.[{_LETTERS}-]++)*\.(?:[A-Za-z]{{2,24}}|xn--[A-Za-z0-9-]{{1,59}})(?![{_LETTERS}-])"
# Labels of 1-63 letters, digits and inner hyphens; a top-level domain of letters (or punycode).
_HOST = re.compile(
    rf"(?:[{_LETTERS}](?:[{_LETTERS}-]{{0,61}}[{_LETTERS}])?\.)+(?:[A-Za-z]{{2,24}}|xn--[A-Za-z0-9-]{{1,59}})"
)
# File extensions that are no top-level domain: `icon@2x.png` is an image, not an address.
_ASSETS = frozenset(
    {
        "png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff", "heic", "css", "scss", "less",
        "js", "mjs", "jsx", "ts", "tsx", "json", "yaml", "yml", "xml", "txt", "csv", "log", "pdf", "html", "htm", "php",
        "woff", "woff2", "ttf", "otf", "eot", "mp3", "mp4", "wav", "webm", "ogg", "map", "lock",
    }
)  # fmt: skip
_LOOK_BACK = 80


def local_start(text: str, at: int, encoded: bool) -> int | None:
    """Where the local part ending at `at` (the at-sign) starts, or None if there is none."""
    behind = text[at - _LOOK_BACK if at > _LOOK_BACK else 0 : at][::-1]
    found = (_ENCODED_LOCAL if encoded else _PLAIN_LOCAL).match(behind)
    if found is None:
        return None
    start = at - found.end()
    before = text[start - 1] if start else ""
    if before == "\\":
        backslashes = (
            start - len(text[:start].rstrip("\\")) if start < 8 else 8 - len(text[start - 8 : start].rstrip("\\"))
        )
        if backslashes % 2 and (escape := _ESCAPE.match(text, start, at)):
            start = escape.end()
    elif before == "%" and _HEX2.match(text, start, at):
        start += 2
    if text[start] in ".'+%" and (leading := _LEADING.match(text, start, at)):
        start = leading.end()
    if start >= at or text[at - 1] == ".":
        return None
    return start


def domain(text: str) -> bool:
    """A host name with a top-level domain that is no file extension."""
    return len(text) <= 253 and _HOST.fullmatch(text) is not None and text.rpartition(".")[2].lower() not in _ASSETS
