"""engine.presets: every preset resolves to its documented metrics when the data has their columns,
drops a metric (with the column it needs in the message, never an error) when one is missing, and
--max-tier keeps exactly the metrics at or below the tier."""

from __future__ import annotations

import random
from typing import Any

import pytest

from touchstone import presets as public
from touchstone.engine.presets import (
    PRESETS,
    TIERS,
    evaluator_tier,
    filter_by_tier,
    required_modes,
    resolve,
)
from touchstone.errors import InputValidationError
from touchstone.evaluators import registry

DOCUMENTED = {
    "question-answering": ["faithfulness", "answer_relevancy", "ranking"],
    "document-search": ["ranking"],
    "chatbot": ["context_relevance", "coherence", "user_satisfaction"],
    "summarization": ["faithfulness", "completeness", "conciseness"],
    "rag": ["faithfulness", "answer_relevancy", "context_relevance", "ranking"],
    "development": ["f1_score", "faithfulness", "answer_relevancy"],
    "pre-production": ["faithfulness", "answer_relevancy", "context_relevance", "context_precision",
                       "context_recall", "answer_correctness", "coherence", "fluency", "content_safety",
                       "ranking", "f1_score"],
    "production": ["ranking", "faithfulness", "latency"],
    "ab-test": ["faithfulness", "answer_relevancy", "coherence"],
}
ALL_COLUMNS = {"query", "context", "response", "ground_truth", "retrieved_documents",
               "retrieval_ground_truth", "feedback", "latency"}


def test_the_documented_presets_and_names() -> None:
    assert list(PRESETS) == list(DOCUMENTED)
    for name, metrics in DOCUMENTED.items():
        assert PRESETS[name].metric_names == metrics
        assert PRESETS[name].kind in ("use case", "stage")
        assert set(metrics) <= set(registry.available()), name


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_all_columns_keep_every_metric(name: str) -> None:
    plan = resolve(name, ALL_COLUMNS)
    assert plan.metrics == DOCUMENTED[name]
    assert plan.dropped == []
    assert resolve(name, None).metrics == DOCUMENTED[name]  # columns unknown (a resumed run)


def _fits(metric: str, columns: set[str]) -> bool:
    modes = required_modes(metric)
    assert modes is not None
    return any(set(mode) <= columns for mode in modes)


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_each_missing_column_drops_its_metrics_with_a_message(name: str) -> None:
    for column in sorted(ALL_COLUMNS):
        columns = ALL_COLUMNS - {column}
        plan = resolve(name, columns)  # never raises
        expected = [m for m in DOCUMENTED[name] if _fits(m, columns)]
        assert plan.metrics == expected
        assert [d.metric for d in plan.dropped] == [m for m in DOCUMENTED[name] if m not in expected]
        for dropped in plan.dropped:
            assert column in dropped.reason
            assert any(dropped.metric in line and column in line for line in plan.messages())


def test_random_column_sets_never_raise_and_partition_the_preset() -> None:
    rng = random.Random(7)
    for _ in range(200):
        name = rng.choice(list(DOCUMENTED))
        columns = {c for c in ALL_COLUMNS if rng.random() < 0.5}
        plan = resolve(name, columns)
        assert sorted(plan.metrics + [d.metric for d in plan.dropped]) == sorted(DOCUMENTED[name])
        assert all(_fits(m, columns) for m in plan.metrics)
        assert not any(_fits(d.metric, columns) for d in plan.dropped)


def test_chatbot_on_conversations_and_feedback() -> None:
    plan = resolve("chatbot", {"conversation", "feedback"})
    assert plan.metrics == ["coherence", "user_satisfaction"]
    assert [d.metric for d in plan.dropped] == ["context_relevance"]
    assert "query, context" in plan.dropped[0].reason


def test_ranking_options_per_preset() -> None:
    assert resolve("question-answering", ALL_COLUMNS).options == {"ranking": {"k": [3]}}
    assert resolve("document-search", ALL_COLUMNS).options == {"ranking": {"k": [10, 20]}}
    assert resolve("production", ALL_COLUMNS).options == {"ranking": {"k": [5]}}
    assert resolve("document-search", {"query"}).options == {}  # ranking dropped, its options too
    ranking = registry.create("ranking", **resolve("document-search", ALL_COLUMNS).options["ranking"])
    out = ranking(retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": 1}],
                  retrieved_documents=[{"document_id": "a", "relevance_score": 1.0}])
    assert {"ndcg_at_10", "recall_at_20", "mrr"} <= set(out)


def test_unknown_preset_is_an_input_error() -> None:
    with pytest.raises(InputValidationError, match="unknown preset 'chat'; known: question-answering"):
        resolve("chat", ALL_COLUMNS)


def test_public_module() -> None:
    plan = public.resolve("rag", {"query", "context", "response"})
    assert isinstance(plan, public.PresetPlan)
    assert plan.metrics == ["faithfulness", "answer_relevancy", "context_relevance"]
    assert [d.metric for d in plan.dropped] == ["ranking"]


def _instances() -> dict[str, Any]:
    judge = {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test"}
    out: dict[str, Any] = {}
    for name in registry.available():
        try:
            out[name] = registry.create(name, model_config=judge)
        except Exception:  # a metric whose optional dependency is missing
            continue
    return out


def test_every_metric_declares_a_tier_judges_are_not_free() -> None:
    for name, cls in registry.available().items():
        assert cls.tier in TIERS, name
        if cls.needs_judge:
            assert cls.tier != "free", f"{name} calls a judge but declares the free tier"


def test_max_tier_keeps_exactly_the_metrics_at_or_below() -> None:
    evs = _instances()
    for limit in TIERS:
        kept, dropped = filter_by_tier(evs, limit)
        assert set(kept) | {d.metric for d in dropped} == set(evs)
        assert all(TIERS.index(evaluator_tier(ev)) <= TIERS.index(limit) for ev in kept.values())
        for d in dropped:
            assert TIERS.index(evaluator_tier(evs[d.metric])) > TIERS.index(limit)
            assert f"above --max-tier {limit}" in d.reason
    assert filter_by_tier(evs, None) == (evs, [])
    with pytest.raises(InputValidationError, match="unknown tier 'cheap'; expected one of free, low"):
        filter_by_tier(evs, "cheap")
