"""``touchstone calibrate`` end to end: a run made by the real ``evaluate()`` with a judge metric on the
loopback fake judge, people's annotations as CSV, the statistics read back from the store (SQLite and
a real PostgreSQL), matched and unmatched rows, and the verdict."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest
from typer.testing import CliRunner

from touchstone.cli.app import app
from touchstone.engine.runner import evaluate
from touchstone.errors import InputValidationError
from touchstone.evaluators.prompt_metrics import CoherenceEvaluator
from touchstone.people.calibration import calibrate, load_annotations
from touchstone.store import open_store
from touchstone.store.base import Store

runner = CliRunner()
N = 30


def planted(i: int) -> int:
    return 1 + (i * 7) % 5


def rows() -> list[dict[str, str]]:
    return [
        {"id": f"q{i}", "query": f"Question {i}?", "response": f"Answer {i} [level {planted(i)}]."}
        for i in range(N)
    ]


def judge_by_level(fake: FakeOpenAIServer, shift: dict[int, int] | None = None) -> None:
    """The fake judge gives each row its planted level (moved by ``shift`` on some rows)."""

    def handler(req: FakeRequest) -> str:
        match = re.search(r"Answer (\d+) \[level (\d)\]", req.prompt)
        assert match is not None
        i, level = int(match.group(1)), int(match.group(2))
        score = min(5, max(1, level + (shift or {}).get(i, 0)))
        return json.dumps({"reason": "ok", "score": score})

    fake.handler = handler


def write_human(
    path: Path, values: Mapping[str, Sequence[float]], extra: list[dict[str, object]] | None = None
) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["row", "annotator", "metric", "value"])
        w.writeheader()
        for row, vals in values.items():
            for k, v in enumerate(vals):
                w.writerow({"row": row, "annotator": f"ann{k}", "metric": "coherence", "value": v})
        for item in extra or []:
            w.writerow(item)
    return path


def make_run(fake: FakeOpenAIServer, store: Store | str, shift: dict[int, int] | None = None) -> str:
    judge_by_level(fake, shift)
    config = {"model": "fake-judge", "base_url": fake.base_url, "api_key": "sk-test-not-a-real-key-0000"}
    result = evaluate(
        data=rows(), evaluators={"coherence": CoherenceEvaluator(model_config=config)}, store=store
    )
    return str(result.run["id"])


def test_calibrate_cli_end_to_end(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    run_id = make_run(fake_openai, db, shift={3: 1, 8: -1})
    rng = np.random.default_rng(0)
    people = {f"q{i}": [planted(i), min(5, max(1, planted(i) + int(rng.integers(-1, 2))))] for i in range(N)}
    human = write_human(
        tmp_path / "human.csv",
        people,
        extra=[{"row": "q999[red]x[/red]", "annotator": "ann0", "metric": "coherence", "value": 3}],
    )
    result = runner.invoke(
        app, ["calibrate", run_id, "--human", str(human), "--store", db, "--json", "--bootstrap", "200"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert (
        doc["matched_rows"] == N and doc["unmatched_rows"] == ["q999[red]x[/red]"] and doc["annotators"] == 2
    )
    judge = np.array([min(5, max(1, planted(i) + {3: 1, 8: -1}.get(i, 0))) for i in range(N)], dtype=float)
    consensus = np.array([np.mean(people[f"q{i}"]) for i in range(N)])
    stats = doc["statistics"]
    assert stats["spearman"]["value"] == pytest.approx(sps.spearmanr(judge, consensus).statistic)
    assert stats["kendall"]["value"] == pytest.approx(sps.kendalltau(judge, consensus).statistic)
    assert stats["exact_agreement"]["value"] == pytest.approx(np.mean(np.rint(judge) == np.rint(consensus)))
    assert stats["spearman"]["ci_lower"] <= stats["spearman"]["value"] <= stats["spearman"]["ci_upper"]
    assert doc["trust"] == "trusted"

    table = runner.invoke(
        app,
        ["calibrate", run_id, "--human", str(human), "--store", db, "--bootstrap", "50"],
        terminal_width=200,
    )
    assert table.exit_code == 0, table.output
    assert "Spearman" in table.output and "matched rows: 30" in table.output
    assert "q999[red]x[/red]" in table.output and "verdict (trusted)" in table.output


def test_a_judge_that_ignores_people_is_not_trusted(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    run_id = make_run(fake_openai, db)
    people = {f"q{i}": [6 - planted(i)] for i in range(N)}  # people see it the other way round
    human = write_human(tmp_path / "human.csv", people)
    result = runner.invoke(
        app, ["calibrate", run_id, "--human", str(human), "--store", db, "--json", "--bootstrap", "50"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["trust"] == "not_trusted" and doc["statistics"]["spearman"]["value"] == pytest.approx(-1.0)


def test_calibrate_on_both_backends(fake_openai: FakeOpenAIServer, any_store: Store, tmp_path: Path) -> None:
    run_id = make_run(fake_openai, any_store)
    human = write_human(tmp_path / "h.csv", {str(f"q{i}"): [planted(i)] for i in range(5)})
    cal = calibrate(any_store, run_id, load_annotations(human), bootstrap=20)
    assert cal.matched == 5 and cal.trust == "too_few_rows"
    assert cal.statistics["exact_agreement"].value == pytest.approx(1.0)


def test_bad_annotations_and_options_exit_2(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    run_id = make_run(fake_openai, db)
    bad = tmp_path / "bad.csv"
    bad.write_text("row,annotator,metric,value\nq1,ann0,coherence,high\nq2,,coherence,3\n")
    result = runner.invoke(app, ["calibrate", run_id, "--human", str(bad), "--store", db])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert 'line 2, field "value"' in text and 'line 3, field "annotator"' in text
    good = write_human(tmp_path / "h.csv", {"q1": [3.0]})
    for args in (["nope-run"], [run_id, "--metric", "fluency"]):
        result = runner.invoke(app, ["calibrate", *args, "--human", str(good), "--store", db])
        assert result.exit_code == 2, result.output
    store = open_store(db)
    try:
        with pytest.raises(InputValidationError, match="no scores for metric"):
            calibrate(
                store,
                run_id,
                load_annotations([{"row": "q1", "annotator": "a", "metric": "xyz", "value": 1}]),
            )
    finally:
        store.close()
