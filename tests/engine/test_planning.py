"""engine.planning: evaluators from metric names and thresholds, the judge from flags, the
environment or a resumed run, judge options, column mappings and the metric catalogue."""

from __future__ import annotations

from pathlib import Path

import pytest

from touchstone import RunStore, evaluate
from touchstone.engine.planning import (
    JudgeChoice,
    build_evaluators,
    column_mapping_config,
    describe_inputs,
    judge_options,
    metric_catalogue,
    plan_evaluation,
    resolve_judge,
    stored_run_settings,
)
from touchstone.errors import ConfigurationError, InputValidationError, UnknownMetricError
from touchstone.evaluators import registry
from touchstone.judges import OpenAIModelConfiguration, as_model_config

JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY",
             "AZURE_OPENAI_DEPLOYMENT", "TOUCHSTONE_JUDGE_MODEL")


@pytest.fixture(autouse=True)
def _no_judge_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


def test_build_evaluators() -> None:
    evs = build_evaluators(["f1_score", "exact_match"], {"f1_score": 0.7}, {})
    assert list(evs) == ["f1_score", "exact_match"]
    assert evs["f1_score"].threshold == 0.7
    with pytest.raises(InputValidationError, match="not one of the chosen metrics"):
        build_evaluators(["f1_score"], {"bleu_score": 0.5}, {})
    with pytest.raises(UnknownMetricError, match="f1_score"):
        build_evaluators(["f1_scor"], {}, {})


def test_column_mapping_and_judge_options() -> None:
    assert column_mapping_config({}) == {}
    assert column_mapping_config({"query": "q", "response": "${target.answer}"}) == {
        "default": {"column_mapping": {"query": "${data.q}", "response": "${target.answer}"}}
    }
    assert judge_options() == {}
    assert judge_options(concurrency=4, cache=False) == {"concurrency": 4, "cache": False}


def test_resolve_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_judge(JudgeChoice()) is None  # nothing names a judge
    stored = OpenAIModelConfiguration(model="stored-judge", base_url="http://127.0.0.1:9/v1")
    assert resolve_judge(JudgeChoice(), stored) is stored
    named = resolve_judge(JudgeChoice(model="other"), stored)
    assert named is not stored and named["model"] == "other"
    monkeypatch.setenv("TOUCHSTONE_JUDGE_MODEL", "env-judge")
    assert resolve_judge(JudgeChoice())["model"] == "env-judge"
    choice = JudgeChoice(azure_endpoint="https://x.openai.azure.com", azure_deployment="d")
    azure = resolve_judge(choice, stored)
    assert as_model_config(azure).provider == "azure_openai"


def test_stored_run_settings_and_resume_plan(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    with pytest.raises(ConfigurationError, match="no run 'nope'"):
        stored_run_settings(store, "nope")
    data = [{"response": "the cat", "ground_truth": "cat", "answer": "a cat"}]
    config = {"default": {"column_mapping": {"response": "${data.answer}"}}}
    result = evaluate(data=data, evaluators={"f1_score": registry.create("f1_score", threshold=0.25)},
                      evaluator_config=config, store=RunStore(store))
    run_id = result.run["id"]
    stored = stored_run_settings(store, run_id)
    assert (stored.metric_names, stored.thresholds) == (["f1_score"], {"f1_score": 0.25})
    assert stored.evaluator_config == config and stored.judge is None
    # resuming takes the stored metrics, thresholds and mapping when none are named...
    plan = plan_evaluation([], {}, {}, store=store, resume=run_id)
    assert list(plan.evaluators) == ["f1_score"] and plan.evaluators["f1_score"].threshold == 0.25
    assert plan.evaluate_kwargs()["evaluator_config"] == config and plan.resume == run_id
    # ... or the same ones; other metrics are refused, not silently replaced
    assert list(plan_evaluation(["f1_score"], {}, {}, store=store, resume=run_id).evaluators) == ["f1_score"]
    with pytest.raises(ConfigurationError, match="the run has f1_score; given exact_match"):
        plan_evaluation(["exact_match"], {}, {}, store=store, resume=run_id)


def test_a_resumed_run_keeps_an_int_threshold_an_int(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    config = {"evaluators": {"coherence": {"metric": "coherence", "options": {"threshold": 3}},
                             "fluency": {"metric": "fluency", "options": {"threshold": 3.5}},
                             "odd": {"metric": "odd", "options": {"threshold": True}}}}
    run_id = store.create_run(config, None, "0")
    stored = stored_run_settings(tmp_path / "runs.db", run_id)
    assert stored.thresholds == {"coherence": 3, "fluency": 3.5}
    assert type(stored.thresholds["coherence"]) is int  # the rows of the resumed run show 3, as before


def test_metric_catalogue_and_input_modes() -> None:
    catalogue = {info.name: info for info in metric_catalogue()}
    assert catalogue.keys() == registry.available().keys()
    assert catalogue["f1_score"].needs_judge is False and catalogue["groundedness"].needs_judge is True
    assert catalogue["groundedness"].inputs == "response, context | query, response | conversation"
    assert catalogue["f1_score"].inputs == "response, ground_truth"
    for name, cls in registry.available().items():
        assert catalogue[name].inputs == describe_inputs(cls)
