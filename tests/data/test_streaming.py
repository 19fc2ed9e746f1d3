"""Streaming readers give the rows and problems the whole-file loaders give, batch by batch."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from touchstone import F1ScoreEvaluator
from touchstone.data.loaders import load_records
from touchstone.data.streaming import check_file, stream_records
from touchstone.errors import InputValidationError


def random_rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "δέλτα", "ε", "x, y", 'quote "q"', ""]
    rows = []
    for _ in range(n):
        row: dict[str, Any] = {"response": " ".join(rng.choices(words, k=rng.randint(1, 6)))}
        if rng.random() < 0.9:
            row["ground_truth"] = " ".join(rng.choices(words, k=rng.randint(1, 6)))
        rows.append(row)
    return rows


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        pd.DataFrame(rows).to_parquet(path, row_group_size=37)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_records_as_the_loader(tmp_path: Path, suffix: str, seed: int) -> None:
    path = write(tmp_path / f"d{suffix}", random_rows(500, seed))
    batches = list(stream_records(path, batch_rows=64))
    assert all(len(b) <= 64 for b in batches)
    streamed = [r for b in batches for r in b]
    assert streamed == load_records(path)


def test_bad_lines_same_problems_as_the_loader(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in random_rows(50, 4)]
    lines[3] = "{not json"
    lines[10] = "[1, 2]"
    lines[20] = '{"response": "a", "ground_truth": "\\ud800"}'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputValidationError) as whole:
        load_records(path)
    with pytest.raises(InputValidationError) as streamed:
        check_file(path, {"f1": F1ScoreEvaluator()}, {})
    assert streamed.value.problems == whole.value.problems
    assert len(whole.value.problems) == 3


def test_check_file_counts_rows_and_reports_missing_inputs(tmp_path: Path) -> None:
    rows = [{"response": "a", "ground_truth": "a"}] * 30
    path = write(tmp_path / "ok.jsonl", rows)
    assert check_file(path, {"f1": F1ScoreEvaluator()}, {}, batch_rows=7) == 30
    many = [{"response": "a"}] * 45
    with pytest.raises(InputValidationError) as exc:
        check_file(write(tmp_path / "missing.jsonl", many), {"f1": F1ScoreEvaluator()}, {}, batch_rows=7)
    assert len(exc.value.problems) == 45
    assert "45" in str(exc.value)
