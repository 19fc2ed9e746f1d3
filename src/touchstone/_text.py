"""Text from data or the store made harmless where it is shown or written.

Strings a user did not write for this terminal (run names, file and column names, values, judge
replies, error messages quoting them) may carry control sequences: ESC sequences that clear the screen
or move the cursor, OSC 52 writes to the clipboard, C1 controls (``\\x9b`` is a one-byte CSI),
bidirectional overrides that make text read differently than it is (U+202E), and Rich markup
(``[red]``, ``[/x]``) that the console would interpret or choke on.

- :func:`escape_terminal`: such characters as visible escapes (``\\x1b``, ``\\u202e``); tab and newline
  kept unless asked.
- :func:`safe_text`: a :class:`rich.text.Text` of it, so Rich never reads markup in it.
- :func:`json_dumps`: ``json.dumps`` keeping other non-ASCII text readable while writing C0/C1
  controls, bidi and other invisible format characters as JSON escapes, so ``cat rows.jsonl`` is safe.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich.text import Text

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""Bidirectional marks, embeddings, overrides and isolates."""
_INVISIBLE = "\u200b-\u200d\u2028\u2029\u2060-\u2064\ufeff\ufff9-\ufffb"
"""Zero-width characters, line/paragraph separators, invisible operators, annotation characters."""

_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}\ud800-\udfff]")
_UNSAFE_WITH_LINES = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}\ud800-\udfff]")
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_BIDI}{_INVISIBLE}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_terminal(value: Any, *, keep_newlines: bool = True) -> str:
    """``value`` as text with every control, bidi and invisible format character written as a visible
    escape (``\\x1b``, ``\\x9b``, ``\\u202e``); tab and newline stay unless ``keep_newlines`` is
    False. Rich markup is not touched here: print the result as :func:`safe_text` or with
    ``markup=False``."""
    text = value if isinstance(value, str) else str(value)
    pattern = _UNSAFE if keep_newlines else _UNSAFE_WITH_LINES
    return pattern.sub(_visible, text)


def one_line(value: Any) -> str:
    """:func:`escape_terminal` for a table cell or a name: newlines and tabs escaped too."""
    return escape_terminal(value, keep_newlines=False)


def safe_text(value: Any, style: str = "", *, keep_newlines: bool = True) -> Text:
    """A Rich ``Text`` holding ``value`` escaped for the terminal: shown literally, markup included."""
    return Text(escape_terminal(value, keep_newlines=keep_newlines), style=style)


def markup_safe(value: Any, *, keep_newlines: bool = True) -> str:
    """``value`` escaped for the terminal and for Rich markup, to splice into a markup string."""
    from rich.markup import escape

    return escape(escape_terminal(value, keep_newlines=keep_newlines))


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def json_dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, ...)`` with DEL, C1 controls, bidi and invisible
    format characters written as ``\\uXXXX`` escapes (C0 controls already are): the same JSON value,
    safe to ``cat``. Those characters only occur inside JSON strings, so replacing them in the
    encoded text is exact."""
    kwargs.setdefault("ensure_ascii", False)
    text = json.dumps(value, **kwargs)
    if text.isascii() and "\x7f" not in text:  # the common case, checked at C speed
        return text
    return _JSON_UNSAFE.sub(_json_escape, text)
