"""A metric's own options from the command line (``--metric-option METRIC.KEY=VALUE``): parsed as YAML
values, checked against what the metric's constructor takes (closest valid name in the error), applied
through the registry's factories, and given again when a run is resumed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from touchstone.cli.app import app
from touchstone.engine.planning import build_evaluators, parse_metric_options, stored_run_settings
from touchstone.errors import ConfigurationError, InputValidationError
from touchstone.evaluators import registry

JUDGE = {"model": "judge", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test"}


def test_values_are_read_as_yaml() -> None:
    parsed = parse_metric_options(
        ["answer_correctness.beta=2", "answer_correctness.weights=[0.5, 0.5]",
         "faithfulness.score_mode=logprobs", "a.b.c=true", "m.k="]
    )
    assert parsed["answer_correctness"] == {"beta": 2, "weights": [0.5, 0.5]}
    assert parsed["faithfulness"] == {"score_mode": "logprobs"}
    assert parsed["a.b"] == {"c": True}  # the last dot separates the key
    assert parsed["m"] == {"k": None}


@pytest.mark.parametrize("item", ["beta=2", "answer_correctness.beta", ".beta=2", "answer_correctness.=2"])
def test_malformed_items_are_input_errors(item: str) -> None:
    with pytest.raises(InputValidationError, match=r"METRIC\.KEY=VALUE"):
        parse_metric_options([item])


def test_options_reach_the_evaluators_through_factories_and_constructors() -> None:
    built = build_evaluators(
        ["answer_correctness", "answer_relevancy", "f1_score"], {}, {"model_config": JUDGE},
        metric_options={"answer_correctness": {"beta": 2.0, "weights": [0.5, 0.5]},
                        "answer_relevancy": {"strictness": 5}},
    )
    assert built["answer_correctness"].beta == 2.0 and built["answer_correctness"].weights == (0.5, 0.5)
    assert built["answer_relevancy"].strictness == 5
    assert built["f1_score"].threshold == 0.5  # untouched: its default
    # a constructor's own check still applies to a value given this way
    with pytest.raises(ConfigurationError, match="strictness"):
        build_evaluators(["answer_relevancy"], {}, {"model_config": JUDGE},
                         metric_options={"answer_relevancy": {"strictness": 0}})


def test_unknown_key_names_the_closest_option() -> None:
    with pytest.raises(InputValidationError, match="did you mean 'beta'"):
        build_evaluators(["answer_correctness"], {}, {"model_config": JUDGE},
                         metric_options={"answer_correctness": {"betta": 2}})
    with pytest.raises(InputValidationError, match="not one of the chosen metrics"):
        build_evaluators(["f1_score"], {}, {}, metric_options={"bleu_score": {"threshold": 0.1}})
    with pytest.raises(ConfigurationError, match="no option 'nope'"):
        registry.create("f1_score", overrides={"nope": 1})


def test_cli_option_is_applied_refused_and_kept_on_resume(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    rows = [{"response": "a b c", "ground_truth": "a b d"}, {"response": "x", "ground_truth": "y z"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = tmp_path / "runs.db"
    runner = CliRunner()
    bad = runner.invoke(app, ["eval", str(data), "-m", "f1_score", "--metric-option", "f1_score.treshold=0.1",
                              "--store", str(store), "-q"])
    assert bad.exit_code == 2 and "did you mean 'threshold'" in bad.output
    ok = runner.invoke(app, ["eval", str(data), "-m", "f1_score", "--metric-option", "f1_score.threshold=0.6",
                             "--store", str(store), "-q", "-o", str(tmp_path / "out")])
    assert ok.exit_code == 0, ok.output
    first = json.loads((tmp_path / "out" / "rows.jsonl").read_text().splitlines()[0])
    assert first["outputs.f1_score.f1_score_threshold"] == 0.6
    assert first["outputs.f1_score.f1_score_result"] == "fail"  # 0.5 < 0.6
    run_id = json.loads((tmp_path / "out" / "summary.json").read_text())["run"]["id"]
    settings = stored_run_settings(store, run_id)
    assert settings.thresholds["f1_score"] == 0.6


def test_resume_gives_stored_plain_options_again(tmp_path: Path) -> None:
    from tests.fakes.openai_server import FakeOpenAIServer

    from touchstone import evaluate

    data = [{"query": "q", "response": "A.", "ground_truth": "A."}]
    store = tmp_path / "runs.db"
    with FakeOpenAIServer() as fake:
        judge = {**JUDGE, "base_url": fake.base_url}
        ev: Any = registry.create("answer_correctness", model_config=judge, overrides={"beta": 3.0})
        result = evaluate(data=data, evaluators={"answer_correctness": ev}, store=store)
    settings = stored_run_settings(store, result.run["id"])
    assert settings.metric_options["answer_correctness"]["beta"] == 3.0
    assert "credential" not in settings.metric_options["answer_correctness"]
