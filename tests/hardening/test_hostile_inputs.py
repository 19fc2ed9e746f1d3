"""Hostile inputs and options refused before anything is spent: for every case ``touchstone eval``
exits 2 with one clear message naming the file, line or field (no traceback), the fake judge
received no request and the store holds no run.

Static cases live in ``tests/hardening/inputs/``; huge, binary or special files (deep nesting, a
FIFO, file names with control characters) are made by the tests."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.hardening.conftest import INPUTS, RAW_CONTROL, run_cli, stored_runs

JUDGE_METRICS = "coherence,f1_score"
"""A judged metric and a local one: a judge call made by mistake is counted by the fake."""


def refused(
    judge: FakeOpenAIServer, tmp_path: Path, data: Path | str, *extra: str, expect: tuple[str, ...] = ()
) -> str:
    """Run eval on ``data`` and check the refusal; return the output."""
    store = tmp_path / "runs.db"
    outcome = run_cli(
        "eval", str(data), "-m", JUDGE_METRICS, "--judge-model", "fake-judge", "--judge-base-url",
        judge.base_url, "--store", str(store), "--out", str(tmp_path / "out"), "-q", *extra,
        env={"OPENAI_API_KEY": "sk-test-hardening-0000"},
    )
    assert outcome.code == 2, outcome.output
    assert "Traceback" not in outcome.output
    assert not isinstance(outcome.exception, Exception) or isinstance(outcome.exception, SystemExit)
    assert outcome.output.count("error:") == 1, outcome.output
    for text in expect:
        assert text in outcome.output, (text, outcome.output)
    assert not RAW_CONTROL.search(outcome.output), repr(outcome.output)
    assert judge.count == 0, "a judge call was made before the input was refused"
    assert stored_runs(store) == 0, "a run was created for refused input"
    assert not (tmp_path / "out").exists()
    return outcome.output


# ----------------------------------------------------------------------------- data files in the corpus
STATIC_CASES = {
    "lone_surrogate.jsonl": ("line 1", '"response"', "surrogate"),
    "lone_surrogate_nested.jsonl": ("line 2", "response.k", "surrogate"),
    "array_with_number.json": ("array_with_number.json", "[1]", "expected a JSON object"),
    "truncated.jsonl": ("line 1", "invalid JSON"),
}


@pytest.mark.parametrize("name", sorted(STATIC_CASES))
def test_corpus_file_is_refused(fresh_judge: FakeOpenAIServer, tmp_path: Path, name: str) -> None:
    output = refused(fresh_judge, tmp_path, INPUTS / name, expect=STATIC_CASES[name])
    assert name in output  # the message names the file


def test_markup_in_column_names_is_shown_literally(fresh_judge: FakeOpenAIServer, tmp_path: Path) -> None:
    output = refused(
        fresh_judge, tmp_path, INPUTS / "markup_columns.jsonl", "--map", "ground_truth=nope",
        expect=("[/x]", "[red]x[/red]", "nope"),
    )
    assert "columns are" in output


# ----------------------------------------------------------------------------- generated data files
def _deep(levels: int) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / f"deep{levels}.jsonl"
        value = "[" * levels + "]" * levels
        path.write_text('{"response": ' + value + ', "ground_truth": "g", "query": "q"}\n', encoding="utf-8")
        return path

    return make


def _fifo(folder: Path) -> Path:
    path = folder / "rows.jsonl"
    os.mkfifo(path)  # reading it would block forever: it must be refused before it is opened
    return path


def _huge_int(folder: Path) -> Path:
    path = folder / "huge_int.jsonl"
    path.write_text('{"response": "r", "ground_truth": ' + "9" * 5000 + "}\n", encoding="utf-8")
    return path


def _markup_path(folder: Path) -> Path:
    path = folder / "a[" / "x]" / "rows[red]x[/red].jsonl"  # the path text holds "[/x]" and markup
    path.parent.mkdir(parents=True)
    path.write_text('{"response": "r"}\n', encoding="utf-8")  # no ground_truth: a validation error
    return path


def _control_path(folder: Path) -> Path:
    path = folder / "rows\x1b[2J\x9b1m\u202eevil.jsonl"
    path.write_text('{"response": "r"}\n', encoding="utf-8")
    return path


def _utf16(folder: Path) -> Path:
    path = folder / "utf16.jsonl"
    path.write_bytes('{"response": "r", "ground_truth": "g"}\n'.encode("utf-16"))
    return path


def _gzip(folder: Path) -> Path:
    import gzip

    path = folder / "rows.csv"
    path.write_bytes(gzip.compress(b"response,ground_truth\nr,g\n"))
    return path


def _directory(folder: Path) -> Path:
    path = folder / "data.jsonl"
    path.mkdir()
    return path


GENERATED: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "nesting 5,000 levels": (_deep(5000), ("line 1", "nested")),
    "nesting 150 levels": (_deep(150), ("line 1", '"response"', "nested deeper than 100")),
    "FIFO": (_fifo, ("regular file", "FIFO")),
    "integer of 5,000 digits": (_huge_int, ("line 1", "invalid JSON")),
    "markup in the path": (_markup_path, ("a[/x]/rows[red]x[/red].jsonl", "ground_truth")),
    "controls in the path": (_control_path, ("\\x1b[2J", "\\x9b", "\\u202e", "ground_truth")),
    "a directory": (_directory, ("directory",)),
    "UTF-16 text": (_utf16, ("utf16.jsonl", "UTF-16")),
    "a gzip file named .csv": (_gzip, ("rows.csv", "gzip")),
    "a missing file with markup": (lambda folder: folder / "[/x] missing.jsonl", ("[/x] missing.jsonl",)),
}


@pytest.mark.parametrize("case", sorted(GENERATED))
def test_generated_input_is_refused(fresh_judge: FakeOpenAIServer, tmp_path: Path, case: str) -> None:
    if case == "FIFO" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    make, expect = GENERATED[case]
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    refused(fresh_judge, tmp_path, make(data_dir), expect=expect)


# ----------------------------------------------------------------------------- options
OPTION_CASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "--map naming no input": (("--map", "bogus=response"), ("--map", "bogus", "inputs")),
    "--min nan": (("--min", "f1_score=nan"), ("--min", "f1_score", "finite")),
    "--min inf": (("--min", "f1_score=inf"), ("--min", "f1_score")),
    "--threshold nan": (("--threshold", "coherence=nan"), ("--threshold", "coherence")),
    "--threshold inf": (("--threshold", "coherence=inf"), ("--threshold", "coherence")),
    "--threshold -1 on 1-5": (("--threshold", "coherence=-1"), ("coherence", "from 1 to 5")),
    "--threshold 7 on 1-5": (("--threshold", "coherence=7"), ("coherence", "from 1 to 5")),
    "--threshold 1.5 on 0-1": (("--threshold", "f1_score=1.5"), ("f1_score", "from 0 to 1")),
    "--timeout nan": (("--timeout", "nan"), ("--timeout",)),
    "--timeout 0": (("--timeout", "0"), ("--timeout",)),
    "--workers -1": (("--workers", "-1"), ("--workers",)),
    "--concurrency 0": (("--concurrency", "0"), ("--concurrency",)),
    "--max-retries -1": (("--max-retries", "-1"), ("--max-retries",)),
    "--defect-level nan": (("--defect-level", "nan"), ("--defect-level",)),
    "--name with markup and a lone surrogate": (("--name", "[/x]\udcff"), ("--name", "UTF-8")),
}


@pytest.mark.parametrize("case", sorted(OPTION_CASES))
def test_option_is_refused(fresh_judge: FakeOpenAIServer, tmp_path: Path, case: str) -> None:
    args, expect = OPTION_CASES[case]
    refused(fresh_judge, tmp_path, INPUTS / "good.jsonl", *args, expect=expect)


# ----------------------------------------------------------------------------- what must still work
def test_csv_cell_over_the_csv_module_default_is_read(tmp_path: Path) -> None:
    """A 200,000-character cell (a long document) is data, not an error: it loads and scores."""
    cell = "word " * 40_000
    path = tmp_path / "big.csv"
    path.write_text(f"response,ground_truth\n{cell},{cell}\n", encoding="utf-8")
    outcome = run_cli("eval", str(path), "-m", "f1_score", "--store", str(tmp_path / "runs.db"), "-q",
                      "--out", str(tmp_path / "o"))
    assert outcome.code == 0, outcome.output
    row = json.loads((tmp_path / "o" / "rows.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert row["outputs.f1_score.f1_score"] == 1.0


def test_nesting_within_the_limit_is_accepted(tmp_path: Path) -> None:
    from touchstone.data.loaders import MAX_DEPTH, load_records

    path = tmp_path / "ok.jsonl"
    value = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    path.write_text('{"response": ' + value + "}\n", encoding="utf-8")
    assert len(load_records(path)) == 1


def test_python_inputs_are_checked_like_files() -> None:
    """A list of dicts or a DataFrame with a lone surrogate or deep nesting is refused with its row."""
    import pandas as pd

    from touchstone.data.loaders import load_records
    from touchstone.errors import InputValidationError

    deep: object = []
    for _ in range(sys.getrecursionlimit() + 10):
        deep = [deep]
    for data, where in (
        ([{"response": "ok"}, {"response": "bad \ud800"}], "<list>, line 2"),
        ([{"response": deep}], "<list>, line 1"),
        (pd.DataFrame({"response": ["ok", "bad \udc80"]}, dtype=object), "<dataframe>, line 2"),
    ):
        with pytest.raises(InputValidationError) as info:
            load_records(data)
        assert str(info.value).startswith(where), str(info.value)
        assert '"response"' in str(info.value)


@pytest.mark.parametrize("kind", ["fifo", "binary", "markup name"])
def test_metric_file_that_cannot_be_read_is_refused(
    fresh_judge: FakeOpenAIServer, tmp_path: Path, kind: str
) -> None:
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        path = tmp_path / "metrics.yaml"
        os.mkfifo(path)
        expect: tuple[str, ...] = ("regular file",)
    elif kind == "binary":
        path = tmp_path / "metrics.yaml"
        path.write_bytes(bytes(range(128, 256)) * 4)
        expect = ("not UTF-8",)
    else:
        path = tmp_path / "[/x]" / "[red]m[/red].yaml"
        expect = ("[/x]", "[red]m[/red]")
    refused(fresh_judge, tmp_path, INPUTS / "good.jsonl", "--metric-file", str(path), expect=expect)


def test_unreadable_path_is_one_message(fresh_judge: FakeOpenAIServer, tmp_path: Path) -> None:
    """A symlink loop and a name too long for the file system: the OS error, not a traceback."""
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop, loop)
    refused(fresh_judge, tmp_path, loop, expect=("loop.jsonl", "cannot read"))
    refused(fresh_judge, tmp_path, tmp_path / ("n" * 300 + ".jsonl"), expect=("cannot read",))
