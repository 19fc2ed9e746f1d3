"""Numeric options of every command are checked by one layer as the command line is parsed: a value
out of range, not finite or absurdly large is one ``error:`` line naming the option and exit status
2, before any file is read, any run is created or any call is made."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from touchstone.cli import app
from touchstone.cli.option_rules import RULES, Rule

runner = CliRunner()

CASES = [
    (["rank", "votes.jsonl", "--seed", "-1"], "--seed must be between 0 and"),
    (["compare", "a", "b", "--seed", "-1"], "--seed must be between 0 and"),
    (["calibrate", "run", "--human", "h.csv", "--seed", "-1"], "--seed"),
    (["compare", "a", "b", "--n-boot", "1000000000"], "--n-boot must be between 1 and 100000"),
    (["compare", "a", "b", "--alpha", "nan"], "--alpha must be above 0 and below 1, got nan"),
    (["compare", "a", "b", "--alpha", "1"], "--alpha must be above 0 and below 1, got 1"),
    (["monitor", "src", "--poll", "nan"], "--poll must be"),
    (["monitor", "src", "--poll", "-1"], "--poll must be"),
    (["ui", "--port", "70000"], "--port must be between 0 and 65535, got 70000"),
    (["eval", "rows.jsonl", "--concurrency", "0"], "--concurrency must be between 1 and"),
    (["eval", "rows.jsonl", "--timeout", "inf"], "--timeout must be above 0"),
    (["eval", "rows.jsonl", "--budget", "nan"], "--budget must be above 0, got nan"),
    (["eval", "rows.jsonl", "--workers", "100000"], "--workers must be between 1 and"),
]


@pytest.mark.parametrize(("args", "message"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_numbers_are_refused_in_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    store = [] if args[0] == "rank" else ["--store", str(tmp_path / "runs.db")]
    result = runner.invoke(app, [*args, *store])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert text.count("error:") == 1 and message in text, text
    assert "Traceback" not in text
    assert not (tmp_path / "runs.db").exists()  # refused before the store was opened


def test_rules_describe_their_bounds() -> None:
    assert Rule(0, 1, open_low=True).problem(0.5) is None
    assert Rule(0, 1, open_low=True).problem(0) == "must be above 0 and at most 1, got 0"
    assert Rule().problem(float("-inf")) == "must be a finite number, got -inf"
    assert all(rule.low is None or rule.high is None or rule.low <= rule.high for rule in RULES.values())
