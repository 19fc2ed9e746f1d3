"""The dry run's estimate against a real run on the loopback fake judge: on random datasets the
estimated judge calls equal the requests the server counted and the estimated prompt tokens are within
10% of the tokens it counted; the run stores estimated against actual (summary["estimate"]); the
dry run's per-tier sums and a sample's subset add up."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer

from touchstone.engine.dryrun import estimate, load_pricing
from touchstone.engine.runner import evaluate
from touchstone.engine.selection import record_estimate, select
from touchstone.errors import InputValidationError
from touchstone.evaluators import registry
from touchstone.judges.config import JudgeSettings
from touchstone.store.sqlite import RunStore

METRICS = ("coherence", "fluency", "relevance", "groundedness", "similarity", "completeness", "conciseness",
           "context_relevance", "faithfulness")
WORDS = ("battery", "hours", "waterproof", "the", "lamp", "charges", "in", "two", "river", "trail", "light",
         "weighs", "grams", "and", "is", "rated", "for", "rain", "night", "camping")


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


def _dataset(rng: random.Random, n: int) -> list[dict[str, Any]]:
    return [{
        "id": f"row-{i}",
        "query": _text(rng, 3, 25) + "?",
        "context": [_text(rng, 5, 120) for _ in range(rng.randint(1, 4))],
        "response": _text(rng, 2, 150),
        "ground_truth": _text(rng, 2, 60),
    } for i in range(n)]


def _evaluators(fake: FakeOpenAIServer, names: tuple[str, ...]) -> dict[str, Any]:
    judge = {"model": "gpt-4o-mini", "base_url": fake.base_url, "api_key": "sk-test-not-a-real-key-0000"}
    return {name: registry.create(name, model_config=judge) for name in names}


def _fake_prompt_tokens(fake: FakeOpenAIServer) -> int:
    # the fake's own count: a quarter of the characters of every message, per request
    return sum(max(1, sum(len(str(m.get("content", ""))) for m in r.body.get("messages") or []) // 4)
               for r in fake.requests if r.path.endswith("/chat/completions"))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_estimate_holds_against_the_fake_server(fake_openai: FakeOpenAIServer, tmp_path: Path,
                                                seed: int) -> None:
    rng = random.Random(seed)
    rows = _dataset(rng, rng.randint(5, 14))
    names = tuple(rng.sample(METRICS, 4))
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    evs = _evaluators(fake_openai, names)
    settings = JudgeSettings(cache=False)
    selection = select(data, evs, settings=settings)
    est = selection.estimate
    assert est is not None and est.cost_usd is not None
    fake_openai.reset()
    store = RunStore(tmp_path / "runs.db")
    result = evaluate(data=str(data), evaluators=evs, store=store, cache=False)
    assert fake_openai.count == est.calls, names
    counted = _fake_prompt_tokens(fake_openai)
    assert abs(est.prompt_tokens - counted) <= 0.10 * counted, (names, est.prompt_tokens, counted)
    doc = record_estimate(store, result.run["id"], est)
    assert doc is not None
    stored = store.get_run(result.run["id"])
    assert stored is not None and stored.summary is not None
    assert stored.summary["estimate"] == json.loads(json.dumps(doc))
    assert stored.summary["summary"]  # the summary itself is kept
    total = doc["total"]
    assert total["calls"]["actual"] == fake_openai.count
    assert total["prompt_tokens"]["actual"] == counted
    assert abs(total["prompt_tokens"]["error"]) <= 0.10
    assert total["calls"]["error"] == 0
    assert set(doc["per_evaluator"]) == set(names)
    assert total["cost_usd"]["actual"] is not None and total["cost_usd"]["estimated"] is not None


def test_per_tier_and_subset_add_up(fake_openai: FakeOpenAIServer) -> None:
    rows = _dataset(random.Random(5), 9)
    evs = _evaluators(fake_openai, ("coherence", "conciseness", "faithfulness"))
    evs["f1_score"] = registry.create("f1_score")
    est = estimate(data=rows, evaluators=evs)
    assert est.tiers == {"coherence": "medium", "conciseness": "low", "faithfulness": "medium",
                         "f1_score": "free"}
    tiers = est.per_tier
    assert list(tiers) == ["free", "low", "medium"]
    assert tiers["free"].get("calls", 0) == 0
    assert sum(t.get("calls", 0) for t in tiers.values()) == est.calls == 27
    assert tiers["medium"]["prompt_tokens"] == (est.per_evaluator["coherence"]["prompt_tokens"]
                                                + est.per_evaluator["faithfulness"]["prompt_tokens"])
    assert est.cost_usd is not None
    assert sum(est.row_cost(i) or 0 for i in range(9)) == pytest.approx(est.cost_usd)
    sub = est.subset([0, 4, 8])
    assert sub.calls == 9
    assert sub.cost_usd == pytest.approx(sum(est.row_cost(i) or 0 for i in (0, 4, 8)))
    assert fake_openai.count == 0  # the dry run calls nothing


def test_pricing_file_overrides_the_table(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    rows = _dataset(random.Random(6), 4)
    evs = _evaluators(fake_openai, ("coherence",))
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o-mini: {input: 1000.0, output: 0}\n")
    table = load_pricing(prices)
    est = estimate(data=rows, evaluators=evs, settings=JudgeSettings(prices=table))
    assert est.cost_usd == pytest.approx(est.prompt_tokens * 1000.0 / 1_000_000)
    prices.write_text("gpt-4o-mini: {input: cheap}\n")
    with pytest.raises(InputValidationError, match=r"gpt-4o-mini.*expected"):
        load_pricing(prices)


def test_large_data_renders_a_seeded_part_and_extrapolates(fake_openai: FakeOpenAIServer,
                                                           tmp_path: Path) -> None:
    rows = _dataset(random.Random(12), 24)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    evs = _evaluators(fake_openai, ("coherence", "conciseness"))
    full = select(data, evs).estimate
    part = select(data, evs, estimate_rows=8)
    assert full is not None and part.estimate is not None
    est = part.estimate
    assert est.measured_rows == 8 and est.rows == 24
    assert est.calls == full.calls == 48  # one call per row and metric: exact however many are rendered
    assert est.prompt_tokens == pytest.approx(full.prompt_tokens, rel=0.35)
    assert "8 of 24 rows rendered" in part.messages[0]
    assert select(data, evs, estimate_rows=8).estimate == est  # seeded: the same rows each time
    assert select(data, evs, estimate_rows=30).estimate == full  # small data: every row
    assert fake_openai.count == 0
