"""Strings from data or the store are shown as text: run names, data paths, column names and values
carrying ESC sequences (clear screen, OSC 52 clipboard writes), C1 controls, bidi overrides and Rich
markup reach the terminal escaped and literal, and the files written hold those characters as JSON
escapes (``cat rows.jsonl`` is safe)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from tests.hardening.conftest import RAW_CONTROL, run_cli
from touchstone._text import escape_terminal, json_dumps, markup_safe, one_line, safe_text

CLEAR = "\x1b[2J"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
CSI_C1 = "\x9b31m"
RLO = "\u202e"
MARKUP = "[red]x[/red]"
CLOSE = "[/x]"
PAYLOAD = f"a{CLEAR}b{OSC52}c{CSI_C1}d{RLO}e{MARKUP}{CLOSE}"


def _assert_safe(text: str) -> None:
    assert not RAW_CONTROL.search(text), repr(RAW_CONTROL.search(text))


def test_escape_terminal_makes_every_control_visible() -> None:
    shown = escape_terminal(PAYLOAD)
    _assert_safe(shown)
    assert shown == "a\\x1b[2Jb\\x1b]52;c;ZWNobyBwd25lZA==\\x07c\\x9b31md\\u202ee[red]x[/red][/x]"
    assert escape_terminal("line 1\n\tline 2") == "line 1\n\tline 2"
    assert one_line("line 1\n\tline 2") == "line 1\\x0a\\x09line 2"
    assert escape_terminal("\u200b\u2066\ufeff\x7f\x00\ud800") == "\\u200b\\u2066\\ufeff\\x7f\\x00\\ud800"
    assert escape_terminal("plain, é, 日本語, emoji 🙂") == "plain, é, 日本語, emoji 🙂"


def test_rich_shows_markup_literally() -> None:
    console = Console(width=200, record=True, color_system=None)
    console.print(safe_text(PAYLOAD))
    console.print(f"[bold]name:[/] {markup_safe(PAYLOAD)}")
    text = console.export_text()
    _assert_safe(text)
    assert text.count(MARKUP) == 2 and text.count(CLOSE) == 2


def test_json_dumps_escapes_c1_and_bidi_and_keeps_the_value() -> None:
    value = {"k" + RLO: PAYLOAD, "accents": "é 日本", "n": [1, 2.5, None]}
    text = json_dumps(value)
    _assert_safe(text)
    assert "\\u009b" in text and "\\u202e" in text and "é 日本" in text
    assert json.loads(text) == value
    assert json.loads(json_dumps(value, indent=2)) == value


@pytest.fixture
def hostile_data(tmp_path: Path) -> Path:
    """Rows whose path, column names and values carry every payload."""
    folder = tmp_path / f"data{CLEAR}{RLO}{CLOSE}"  # "[/x]" makes a folder "data...[" holding "x]"
    path = folder / f"rows{CSI_C1}{MARKUP}.jsonl"
    path.parent.mkdir(parents=True)
    rows = [
        {"response": f"the answer {PAYLOAD}", "ground_truth": f"the answer {PAYLOAD}", f"extra{OSC52}": 1},
        {"response": "x", "ground_truth": "y", f"extra{OSC52}": 2},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_runs_and_show_print_hostile_strings_as_text(
    hostile_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # table cells on one line, so they can be read back. (Not by setting ``common.out.width``: undoing
    # that pins the console at the width it had, 80 columns, for every later test.)
    monkeypatch.setenv("COLUMNS", "1000")
    store = str(tmp_path / "runs.db")
    out = tmp_path / "out"
    ran = run_cli("eval", str(hostile_data), "-m", "f1_score", "--store", store, "--out", str(out), "-q",
                  "--name", f"name {PAYLOAD}")
    assert ran.code == 0, ran.output
    _assert_safe(ran.output)

    # the files: same values, C1 and bidi as JSON escapes
    for name in ("rows.jsonl", "summary.json", "evaluation_results.json"):
        text = (out / name).read_text(encoding="utf-8")
        _assert_safe(text.replace("\n", ""))
    first = json.loads((out / "rows.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["inputs.response"] == f"the answer {PAYLOAD}"

    listed = run_cli("runs", "--store", store)
    assert listed.code == 0, listed.output
    _assert_safe(listed.output)
    flat = listed.output
    assert "\\x1b[2J" in flat and "\\x9b31m" in flat and "\\u202e" in flat
    assert MARKUP in flat and CLOSE in flat

    run_id = re.search(r"\d{8}-\d{6}-[0-9a-f]{6}", listed.output)
    assert run_id is not None
    for args in ((), ("--json",)):
        shown = run_cli("show", run_id.group(0), "--store", store, *args)
        assert shown.code == 0, shown.output
        _assert_safe(shown.output)
    doc = json.loads(run_cli("show", run_id.group(0), "--store", store, "--json").output)
    assert doc["run"]["name"] == f"name {PAYLOAD}"  # the value itself is kept, only its display escaped


def test_error_messages_escape_column_names_and_values(hostile_data: Path, tmp_path: Path) -> None:
    """An input error quoting the hostile path and column names prints them escaped and literal."""
    failed = run_cli("eval", str(hostile_data), "-m", "f1_score", "--store", str(tmp_path / "runs.db"),
                     "--map", f"ground_truth=missing{CLOSE}")
    assert failed.code == 2, failed.output
    assert "Traceback" not in failed.output
    _assert_safe(failed.output)
    assert f"missing{CLOSE}" in failed.output and "\\x1b]52" in failed.output and MARKUP in failed.output
