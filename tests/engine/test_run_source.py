"""What a run says its data was: a file's path, a sample as its file, a monitor's window as the
monitor, and rows given in memory as their kind and count, never a bare ``<list>``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from touchstone import F1ScoreEvaluator, evaluate
from touchstone.engine.runner import describe_source
from touchstone.store import open_store


def test_in_memory_rows_are_described_by_kind_and_count(tmp_path: Path) -> None:
    rows = [{"response": "a", "ground_truth": "a"}] * 3
    run = evaluate(data=rows, evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "runs.db").run
    (info,) = open_store(tmp_path / "runs.db").list_runs()
    assert info.id == run["id"] and info.config["data"] == "a list of 3 rows (in memory)"
    assert describe_source(pd.DataFrame(rows), {}) == "a DataFrame of 3 rows (in memory)"


def test_samples_and_monitor_windows_name_where_they_came_from() -> None:
    sampled = {"sampling": {"data": "data/qa.jsonl", "n": 2}}
    assert describe_source([{}, {}], sampled) == "data/qa.jsonl (a sample of 2 rows)"
    window = {"monitor": {"name": "prod", "window_start": "2025-05-01T10:00:00Z",
                          "window_end": "2025-05-01T11:00:00Z"}}
    expected = "monitor prod, window 2025-05-01T10:00:00Z .. 2025-05-01T11:00:00Z"
    assert describe_source([{}], window) == expected
    assert describe_source("rows.jsonl", sampled) == "rows.jsonl"
