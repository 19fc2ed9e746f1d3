"""touchstone annotate: create tasks (run, two runs, dataset, queue), export and import answers in the
shape calibrate and rank read, the queue and the feedback windows; bad input exits 2."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from tests.people.conftest import make_run
from typer.testing import CliRunner

from touchstone.cli import app
from touchstone.people import annotations as an
from touchstone.people import feedback as fb
from touchstone.people.calibration import load_annotations
from touchstone.people.votes import load_battles
from touchstone.store import open_store

runner = CliRunner()
ROWS = [{"id": f"q{i}", "query": f"question {i}", "response": f"answer {i} [bold]x[/bold]"} for i in range(6)]


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def _task_id(output: str) -> str:
    found = re.search(r"task (task-\S+):", output)
    assert found, output
    return found.group(1)


def test_create_export_import_and_feed_calibrate_and_rank(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    store = open_store(db)
    values = [(5.0, {"coherence_threshold": 3})] * 6
    values[4] = (3.0, {"coherence_threshold": 3})
    run_a = make_run(store, "alpha", ROWS, {"coherence": values})
    run_b = make_run(store, "beta", [{**r, "response": "other"} for r in ROWS])
    store.close()

    code, output = invoke("annotate", "create", "--run", run_a, "--dimensions", "coherence", "--store", db)
    assert code == 0, output
    likert = _task_id(output)
    store = open_store(db)
    an.save_answers(store, likert, "ann1", [{"item": i, "dimension": "coherence", "value": 1 + i % 5}
                                            for i in range(6)])
    store.close()
    out_csv = tmp_path / "answers.csv"
    code, output = invoke("annotate", "export", likert, "-o", str(out_csv), "--store", db)
    assert code == 0 and "6 answers" in output
    with out_csv.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["row"] for r in rows] == [f"q{i}" for i in range(6)] and rows[2]["value"] == "3"
    assert len(load_annotations(out_csv)) == 6  # what `touchstone calibrate --human` reads

    code, output = invoke("annotate", "create", "--run", run_a, "--against", run_b, "--store", db)
    pairwise = _task_id(output)
    assert "pairwise, 6 items" in output
    votes = tmp_path / "votes.jsonl"
    votes.write_text("".join(json.dumps({"item": i, "annotator": "ann2", "dimension": "overall",
                                         "winner": ["model_a", "model_b", "tie"][i % 3]}) + "\n"
                             for i in range(6)), encoding="utf-8")
    code, output = invoke("annotate", "import", pairwise, str(votes), "--store", db)
    assert code == 0 and "6 answers imported" in output, output
    out_jsonl = tmp_path / "battles.jsonl"
    assert invoke("annotate", "export", pairwise, "-o", str(out_jsonl), "--store", db)[0] == 0
    battles = load_battles(out_jsonl)  # what `touchstone rank` reads
    assert [b[2] for b in battles] == [1.0, 0.0, 0.5] * 2

    store = open_store(db)
    fb.record_feedback(store, [{"interaction_id": "q1", "kind": "thumbs_down",
                                "created": "2026-11-23T10:00:00"}])
    store.close()
    code, output = invoke("annotate", "queue", run_a, "--json", "--store", db)
    assert code == 0 and [x["idx"] for x in json.loads(output)][:2] == [1, 4]
    code, output = invoke("annotate", "create", "--queue", run_a, "--budget", "2", "--store", db)
    assert code == 0 and "2 items" in output
    args = ("annotate", "feedback", "--window", "hour", "--run", run_a, "--metric", "coherence",
            "--store", db)
    assert invoke(*args)[0] == 0
    code, output = invoke(*args, "--json")
    assert code == 0 and json.loads(output)[0]["start"] == "2026-11-23T10"
    assert json.loads(output)[0]["judge_mean"] == 5.0
    code, output = invoke("annotate", "tasks", "--json", "--store", db)
    assert code == 0 and len(json.loads(output)) == 3


def test_bad_input_exits_2(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    store = open_store(db)
    run = make_run(store, "r", ROWS)
    store.close()
    assert invoke("annotate", "create", "--store", db)[0] == 2
    assert invoke("annotate", "create", "--run", run, "--dataset", "x.jsonl", "--store", db)[0] == 2
    code, output = invoke("annotate", "create", "--run", "nope", "--store", db)
    assert code == 2 and "no run" in output
    code, output = invoke("annotate", "create", "--run", run, "--dimensions", "a,a", "--store", db)
    assert code == 2 and "repeat" in output
    assert invoke("annotate", "export", "task-x", "-o", str(tmp_path / "a.txt"), "--store", db)[0] == 2
    assert invoke("annotate", "export", "task-x", "-o", str(tmp_path / "a.csv"), "--store", db)[0] == 2
    assert invoke("annotate", "feedback", "--window", "year", "--store", db)[0] == 2
    assert invoke("annotate", "queue", "nope", "--store", db)[0] == 2
    assert invoke("annotate", "serve", "--port", "70000", "--store", db)[0] == 2
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"query": "q", "response_a": "x"}) + "\n", encoding="utf-8")
    code, output = invoke("annotate", "create", "--dataset", str(data), "--store", db)
    assert code == 2 and "response_b" in output
