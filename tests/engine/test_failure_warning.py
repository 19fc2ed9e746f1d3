"""A run made in Python whose scores partly failed says so once, with the count and the first cause,
instead of printing nothing; the command line shows the failures in its table instead."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from touchstone import evaluate
from touchstone.engine.runner import EvaluationFailedError
from touchstone.errors import FailedScoresWarning

ROWS = [{"response": r} for r in ("fine", "bad", "fine", "bad", "fine")]


def flaky(response: str) -> dict[str, Any]:
    if response == "bad":
        raise ValueError("cannot score a bad response")
    return {"score": 1.0}


def test_a_run_with_failures_warns_once_with_the_count_and_first_cause(tmp_path: Path) -> None:
    with pytest.warns(FailedScoresWarning) as caught:
        result = evaluate(data=ROWS, evaluators={"flaky": flaky}, store=tmp_path / "runs.db")
    mine = [w for w in caught if issubclass(w.category, FailedScoresWarning)]
    assert len(mine) == 1
    message = str(mine[0].message)
    assert message.startswith(f"2 scores could not be obtained in run {result.run['id']}")
    assert "flaky" in message and "cannot score a bad response" in message
    assert result.n_failed == 2


def test_a_clean_run_is_silent_and_fail_on_errors_raises_instead(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", FailedScoresWarning)
        evaluate(data=[{"response": "fine"}], evaluators={"flaky": flaky}, store=tmp_path / "runs.db")
        with pytest.raises(EvaluationFailedError):
            evaluate(data=ROWS, evaluators={"flaky": flaky}, store=tmp_path / "runs.db",
                     fail_on_evaluator_errors=True)
