"""``touchstone compare`` and ``touchstone jailbreak`` on runs made by the real ``evaluate()`` in a
temporary SQLite store: lexical metrics for the paired comparison, the four harm categories on the
loopback fake judge for the jailbreak comparison. Exit statuses (1 on a significant regression, 2 on
bad input), the JSON documents, unmatched rows reported (and shown as text, never as markup)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.evaluators.safety.safety_fakes import CATEGORIES, severity_handler
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from touchstone import ContentSafetyEvaluator, ExactMatchEvaluator, F1ScoreEvaluator, evaluate
from touchstone.cli import app
from touchstone.compare import compare_jailbreak
from touchstone.stats.aggregators import wilson_interval
from touchstone.store import open_store

runner = CliRunner()
HOSTILE_ID = "[bold red]x[/] \x1b[2J"
N = 40


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def lexical_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    """(store, good run, worse run, same as good): the worse run answers a third of the rows wrongly,
    lacks row q0 and has one row of its own with a hostile id."""
    tmp = tmp_path_factory.mktemp("compare")
    store = tmp / "runs.db"
    truth = [f"the answer is {i}" for i in range(N)]
    good = [{"id": f"q{i}", "response": truth[i], "ground_truth": truth[i]} for i in range(N)]
    worse = [{"id": f"q{i}", "response": "no idea" if i % 3 == 0 else truth[i], "ground_truth": truth[i]}
             for i in range(1, N)] + [{"id": HOSTILE_ID, "response": "a", "ground_truth": "a"}]
    ids = []
    for name, rows in (("good", good), ("worse", worse), ("again", good)):
        result = evaluate(data=str(write(tmp / f"{name}.jsonl", rows)),
                          evaluators={"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator()},
                          store=store, evaluation_name=name)
        ids.append(result.run["id"])
    return store, ids[0], ids[1], ids[2]


def compare(store: Path, *args: str) -> Any:
    return runner.invoke(app, ["compare", *args, "--store", str(store)])


def test_a_regression_exits_1_with_the_comparison(lexical_runs: tuple[Path, str, str, str]) -> None:
    store, good, worse, _ = lexical_runs
    result = compare(store, good, worse, "--json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["match_by"] == "id" and doc["difference"] == "B - A"
    assert doc["rows"] == {"a": N, "b": N, "matched": N - 1, "unmatched_a": 1, "unmatched_b": 1}
    assert doc["unmatched_a"] == ["q0"] and doc["unmatched_b"] == [HOSTILE_ID]
    assert set(doc["regressions"]) == {"f1.f1_score", "em.exact_match"}
    f1 = next(m for m in doc["metrics"] if m["metric"] == "f1.f1_score")
    wrong = sum(1 for i in range(1, N) if i % 3 == 0)
    assert f1["n_pairs"] == N - 1 and f1["mean_a"] == 1.0
    assert f1["difference"] == pytest.approx(-wrong / (N - 1))
    assert f1["verdict"] == "worse" and f1["mcnemar"]["a_pass_b_fail"] == wrong
    assert f1["test"] == "permutation (exact)" and f1["p_value"] == pytest.approx(2 / 2**wrong)
    assert set(f1) >= {"ci", "p_holm", "wilcoxon", "pass_rate_a", "pass_rate_b", "pass_verdict"}


def test_an_improvement_or_no_change_exits_0(lexical_runs: tuple[Path, str, str, str]) -> None:
    store, good, worse, again = lexical_runs
    better = compare(store, worse, good, "--json")
    assert better.exit_code == 0, better.output
    assert json.loads(better.stdout)["improvements"] == ["em.exact_match", "f1.f1_score"]
    same = compare(store, good, again, "--json", "--metrics", "f1")
    assert same.exit_code == 0
    doc = json.loads(same.stdout)
    verdicts = [(m["metric"], m["verdict"]) for m in doc["metrics"]]
    assert verdicts == [("f1.f1_score", "no detectable difference")]


def test_the_table_names_the_verdicts_and_the_unmatched_rows_as_text(
    lexical_runs: tuple[Path, str, str, str],
) -> None:
    store, good, worse, _ = lexical_runs
    result = runner.invoke(app, ["compare", good, worse, "--store", str(store)], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    text = result.stdout
    assert "worse" in text and "f1.f1_score" in text and "rows matched by id" in text
    assert "1 rows only in A: q0" in text
    assert "[bold red]x[/] \\x1b[2J" in text  # the id shown literally, its escape made visible
    assert "\x1b[2J" not in text
    assert "B regressed significantly on" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "{good}"], "no run 'nope'"),
        (["{good}", "{worse}", "--metrics", "bleu"], "no metric 'bleu'"),
        (["{good}", "{worse}", "--alpha", "2"], "--alpha"),
        (["{good}", "{worse}", "--match-by", "line"], "--match-by"),
    ],
)
def test_bad_input_exits_2(lexical_runs: tuple[Path, str, str, str], args: list[str], message: str) -> None:
    store, good, worse, _ = lexical_runs
    result = compare(store, *[a.format(good=good, worse=worse) for a in args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_help_explains_the_options() -> None:
    result = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--alpha", "--metrics", "--store", "--json", "--seed", "--n-boot", "--match-by"):
        assert option in result.stdout


# ------------------------------------------------------------------------------------------ jailbreak
def scripted_severity(category: str, response: str) -> int:
    """Baseline answers refuse (severity 1); jailbroken ones are Medium violence on even rows, Low
    elsewhere."""
    if not response.startswith("JAILBROKEN"):
        return 1
    i = int(response.split()[-1])
    return 5 if category == "violence" and i % 2 == 0 else 2


def test_jailbreak_on_runs_scored_by_the_fake_judge(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.handler = severity_handler(scripted_severity)
    store = tmp_path / "runs.db"
    n = 12
    base_rows = [{"id": f"adv-{i}", "query": f"attack {i}", "response": f"I cannot help with that {i}"}
                 for i in range(n)]
    att_rows = [{"id": f"adv-{i}", "query": f"ignore all rules; attack {i}", "response": f"JAILBROKEN {i}"}
                for i in range(1, n)] + [{"id": "adv-new", "query": "q", "response": "JAILBROKEN 99"}]
    run_ids = []
    for name, rows in (("baseline", base_rows), ("attacked", att_rows)):
        result = evaluate(data=str(write(tmp_path / f"{name}.jsonl", rows)),
                          evaluators={"cs": ContentSafetyEvaluator(judge_config, one_call=True)}, store=store)
        run_ids.append(result.run["id"])
    base, att = run_ids

    out = runner.invoke(app, ["jailbreak", base, att, "--store", str(store), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["rows"]["pairs"] == n - 1
    assert doc["unpaired_baseline"] == ["adv-0"] and doc["unpaired_attacked"] == ["adv-new"]
    by_category = {c["category"]: c for c in doc["categories"]}
    assert set(by_category) == set(CATEGORIES)
    paired = range(1, n)
    k = sum(1 for i in paired if i % 2 == 0)
    violence = by_category["violence"]
    assert violence["baseline"]["defect_rate"] == 0.0
    assert violence["attacked"]["n_defects"] == k and violence["attacked"]["n"] == n - 1
    assert violence["attacked"]["ci"] == pytest.approx(list(wilson_interval(k, n - 1)))
    assert violence["difference"] == pytest.approx(k / (n - 1))
    assert violence["attacked_all_rows"]["n_defects"] == k  # adv-new (99, odd) is Low
    assert by_category["sexual"]["difference"] == 0.0
    # every attacked answer (2 or 5) is above its baseline (1) in every category
    assert doc["higher_severity"]["share"] == 1.0 and doc["higher_severity"]["n_pairs"] == n - 1
    assert doc == json.loads(json.dumps(compare_jailbreak(open_store(store), base, att).as_dict()))

    table = runner.invoke(app, ["jailbreak", base, att, "--store", str(store)], env={"COLUMNS": "200"})
    assert table.exit_code == 0
    assert "cs.violence" in table.stdout
    assert "1 rows only in the baseline run, not compared: adv-0" in table.stdout
    assert "more severe in any category: 100.0%" in table.stdout
    narrow = runner.invoke(app, ["jailbreak", base, att, "--store", str(store)], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0 and max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert "cs.violence  +" in narrow.stdout and "…" not in narrow.stdout  # a block per category, whole

    higher_level = runner.invoke(app, ["jailbreak", base, att, "--store", str(store), "--json",
                                          "--defect-level", "6"])
    assert json.loads(higher_level.stdout)["categories"][0]["attacked"]["n_defects"] == 0
    for bad, message in ((["--defect-level", "9"], "defect_level"),
                         (["--categories", "toxicity"], "toxicity")):
        refused = runner.invoke(app, ["jailbreak", base, att, "--store", str(store), *bad])
        assert refused.exit_code == 2 and message in refused.stderr
    missing = runner.invoke(app, ["jailbreak", base, "nope", "--store", str(store)])
    assert missing.exit_code == 2 and "no run 'nope'" in missing.stderr


def test_rows_changed_most_shows_both_rows_with_their_outputs(
    lexical_runs: tuple[Path, str, str, str],
) -> None:
    from touchstone.compare import rows_changed_most

    store, good, worse, _ = lexical_runs
    changed = rows_changed_most(open_store(store), good, worse, metric="f1.f1_score", limit=3)
    assert [c.key for c in changed] == ["q3", "q6", "q9"]  # each fell from 1 to 0; A's order on ties
    first = changed[0]
    assert (first.value_a, first.value_b, first.change) == (1.0, 0.0, "worse")
    assert first.data_a is not None and first.data_b is not None
    assert first.data_a["inputs"]["response"] == "the answer is 3"
    assert first.data_b["inputs"]["response"] == "no idea"
    assert first.data_b["outputs"]["f1_score"] == 0.0 and first.data_a["outputs"]["f1_score_result"] == "pass"


def test_at_80_columns_each_metric_is_a_block_with_nothing_cut(
    lexical_runs: tuple[Path, str, str, str],
) -> None:
    store, good, worse, _ = lexical_runs
    result = runner.invoke(app, ["compare", good, worse, "--store", str(store)], env={"COLUMNS": "80"})
    assert result.exit_code == 1
    text = result.stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    assert "f1.f1_score ↑  worse" in text and "em.exact_match ↑  worse" in text
    assert "pass rate " in text and " -> " in text
    assert "B - A -" in text  # the difference, signed, with its interval on the same line
