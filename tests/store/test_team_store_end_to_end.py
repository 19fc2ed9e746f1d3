"""The team store end to end: ``evaluate(..., store="postgresql://...")`` with lexical metrics, a
resumed run, and the command line (``eval``, ``runs``, ``show``) on a real PostgreSQL server; the
URL's password appears in no result, stored configuration, summary, output or message."""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.store.pg_server import PASSWORD
from typer.testing import CliRunner

from touchstone import BleuScoreEvaluator, F1ScoreEvaluator, evaluate
from touchstone.cli import app
from touchstone.store import open_store, redact_url

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
ROWS = [
    {"response": f"the answer is {i} apples and {i % 3} pears", "ground_truth": f"the answer is {i} apples"}
    for i in range(40)
]


def _everything_stored(url: str) -> str:
    """Every text column of every table of the store, as one string."""
    with psycopg.connect(url) as c:
        tables = [r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return json.dumps([c.execute(f"SELECT * FROM {t}").fetchall() for t in tables], default=str)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        math.isclose(a[k], b[k]) if isinstance(a[k], float) else a[k] == b[k] for k in a
    )


def test_evaluate_on_postgresql_then_resume(pg_url: str, tmp_path: Path) -> None:
    evaluators = {"f1": F1ScoreEvaluator(), "bleu": BleuScoreEvaluator()}
    result = evaluate(data=ROWS, evaluators=evaluators, store=pg_url, evaluation_name="team",
                      output_path=tmp_path / "out")
    on_sqlite = evaluate(data=ROWS, evaluators=evaluators, store=tmp_path / "s.db")
    assert _same(result.metrics, on_sqlite.metrics)
    assert result.summary.keys() == on_sqlite.summary.keys()
    run_id = result.run["id"]
    store = open_store(pg_url)
    info = store.get_run(run_id)
    assert info is not None and info.status == "completed" and info.name == "team"
    assert store.count_scores(run_id) == 2 * len(ROWS)
    assert len(store.score_values(run_id, "f1", "f1_score")) == len(ROWS)

    # An interrupted run: some results never reached the store. Resuming scores exactly those: a
    # stored result (row 0, marked) is kept as it is, the missing ones are computed again.
    f1_before = store.get_scores(run_id)
    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("DELETE FROM scores WHERE run_id = %s AND evaluator = 'f1' AND idx >= 30", (run_id,))
        c.execute("DELETE FROM score_values WHERE run_id = %s AND evaluator = 'f1' AND idx >= 30", (run_id,))
        c.execute("UPDATE scores SET outputs = '{\"f1_score\": 0.123}' "
                  "WHERE run_id = %s AND evaluator = 'f1' AND idx = 0", (run_id,))
        c.execute("UPDATE runs SET status = 'interrupted' WHERE id = %s", (run_id,))
    assert store.count_scores(run_id) == 2 * len(ROWS) - 10
    resumed = evaluate(data=ROWS, evaluators=evaluators, store=pg_url, resume=run_id)
    assert resumed.run["id"] == run_id
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    after = store.get_scores(run_id)
    assert len(after) == 2 * len(ROWS)
    assert after[0, "f1"][0] == {"f1_score": 0.123}  # not scored again
    assert all(after[i, "f1"] == f1_before[i, "f1"] for i in range(30, 40))  # scored again, the same
    assert len(store.score_values(run_id, "f1")) == len(ROWS)

    out = tmp_path / "out"
    files = [out] if out.is_file() else [p for p in out.rglob("*") if p.is_file()]
    assert files
    written = [json.dumps(result.run, default=str), json.dumps(result.summary, default=str)]
    assert all(PASSWORD not in text for text in written + [f.read_text() for f in files])
    assert PASSWORD not in _everything_stored(pg_url)
    store.close()


runner = CliRunner()


def _invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.output


def test_command_line_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    code, output = _invoke("eval", str(EXAMPLES / "qa.jsonl"), "-m", "f1_score,exact_match",
                           "--store", pg_url, "--out", str(out_dir), "--name", "teamrun", "-q")
    assert code == 0, output
    summary_text = (out_dir / "summary.json").read_text()
    run_id = json.loads(summary_text)["run"]["id"]
    assert redact_url(pg_url) in output.replace("\n", "")  # where it was stored, without the password

    code, listing = _invoke("runs", "--store", pg_url)
    assert code == 0 and run_id[:10] in listing
    code, listing_env = _invoke("runs", env={"TOUCHSTONE_STORE": pg_url})
    assert code == 0 and run_id[:10] in listing_env
    code, shown = _invoke("show", run_id, "--store", pg_url, "--json")
    assert code == 0
    doc = json.loads(shown)
    assert doc["metrics"] == json.loads(summary_text)["metrics"] and doc["run"]["id"] == run_id
    code, table = _invoke("show", run_id, "--store", pg_url)
    assert code == 0 and "f1_score" in table
    code, missing = _invoke("show", "nope", "--store", pg_url)
    assert code == 2 and "no run 'nope'" in missing

    everything = [output, listing, listing_env, shown, table, missing, summary_text,
                  (out_dir / "rows.jsonl").read_text(), _everything_stored(pg_url)]
    assert all(PASSWORD not in text for text in everything)


@pytest.mark.parametrize("command", ["runs", "show", "eval"])
def test_command_line_with_an_unreachable_store_exits_1_in_one_line(command: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://me:{PASSWORD}@127.0.0.1:{port}/runs"
    args = {"runs": ["runs"], "show": ["show", "some-run"],
            "eval": ["eval", str(EXAMPLES / "qa.jsonl"), "-m", "f1_score", "-q"]}[command]
    result = runner.invoke(app, [*args, "--store", url])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert "Traceback" not in result.output
    assert f"cannot connect to the run store postgresql://me@127.0.0.1:{port}/runs" in result.output.replace(
        "\n", " ")
    assert PASSWORD not in result.output
