"""The claim-based RAG metrics over the loopback fake OpenAI server: scripted claims and verdicts give
the expected scores, the evidence lands in the properties, edge cases have their documented outcome,
a partial verdict list is repaired once and then recorded as a failure naming what was missing, the
summary counts the claims checked, and each metric makes one judge call per row."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone import evaluate
from touchstone.evaluators import registry
from touchstone.evaluators.judge import JudgeReplyError
from touchstone.evaluators.rag.answer_correctness import AnswerCorrectnessEvaluator
from touchstone.evaluators.rag.claims import verify_claims
from touchstone.judges.client import get_judge_client

Handler = Callable[[FakeRequest], str]


def claims_reply(*verdicts: tuple[str, bool, str], refusal: bool = False) -> str:
    items = [{"claim": c, "reason": f"why {c}", "verdict": "supported" if ok else "unsupported",
              "document": doc} for c, ok, doc in verdicts]
    return json.dumps({"claims": items, "refusal": refusal})


def schema_name(req: FakeRequest) -> str:
    return str(req.body["response_format"]["json_schema"]["name"])


@pytest.fixture()
def fake() -> Any:
    with FakeOpenAIServer() as server:
        yield server


def config(fake: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "judge", "base_url": fake.base_url, "api_key": "sk-test"}


def score(ev: Any, **inputs: Any) -> dict[str, Any]:
    return dict(asyncio.run(ev.ascore(ev.check_call_inputs(inputs))))


def test_faithfulness_scripted_verdicts(fake: FakeOpenAIServer) -> None:
    fake.handler = lambda req: claims_reply(("A", True, "doc-1"), ("B", False, ""), ("C", True, "doc-2"),
                                            ("D", True, "nowhere"))
    ev = registry.create("faithfulness", model_config=config(fake))
    out = score(ev, query="q?", context=["A and D.", "C."], response="A. B. C. D.")
    assert out["faithfulness"] == pytest.approx(3 / 4)
    assert fake.count == 1  # claims split and verified in one call
    props = out["faithfulness_properties"]
    first = {"claim": "A", "verdict": "supported", "document": "doc-1", "reason": "why A"}
    assert props["claims"][0] == first
    assert props["claims"][1]["verdict"] == "unsupported" and props["claims"][1]["document"] is None
    assert props["claims"][3]["document"] is None  # an unknown document id is not kept
    assert out["faithfulness_claims"] == 4 and out["faithfulness_refusal"] == 0
    assert "Unsupported: B." in out["faithfulness_reason"]
    outcome = asyncio.run(ev.ascore(ev.check_call_inputs({"context": "A", "response": "A"})))
    assert outcome.scores[0].label == "claims"
    assert outcome.scores[0].properties is not None and len(outcome.scores[0].properties["claims"]) == 4


def test_faithfulness_edge_cases(fake: FakeOpenAIServer) -> None:
    ev = registry.create("faithfulness", model_config=config(fake))
    fake.handler = lambda req: claims_reply(refusal=True)
    out = score(ev, context="A.", response="I do not know.")
    assert out["faithfulness"] == 1.0 and out["faithfulness_properties"]["outcome"] == "refusal"
    assert out["faithfulness_refusal"] == 1 and out["faithfulness_no_claims"] == 1
    fake.handler = lambda req: claims_reply()
    out = score(ev, context="A.", response="Hello!")
    assert out["faithfulness"] == 1.0 and out["faithfulness_properties"]["outcome"] == "no_claims"
    # empty context: no document can support a claim, whatever the judge says
    fake.handler = lambda req: claims_reply(("A", True, "doc-1"))
    out = score(ev, context=[], response="A.")
    assert out["faithfulness"] == 0.0 and out["faithfulness_properties"]["outcome"] == "empty_context"
    # an empty or blank response states nothing: no claims, and no judge call is spent on it
    calls = fake.count
    for blank in ("", "  \n "):
        out = score(ev, context="A.", response=blank)
        assert out["faithfulness"] == 1.0 and out["faithfulness_properties"]["outcome"] == "no_claims"
        assert out["faithfulness_claims"] == 0 and out["faithfulness_no_claims"] == 1
    assert fake.count == calls


def test_context_recall_scripted_and_edges(fake: FakeOpenAIServer) -> None:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        return claims_reply(("X", True, "doc-2"), ("Y", False, ""))

    fake.handler = handler
    ev = registry.create("context_recall", model_config=config(fake))
    out = score(ev, query="q", context=["a", "X"], ground_truth="X and Y")
    assert out["context_recall"] == 0.5 and out["context_recall_claims"] == 2
    assert "reference answer" in seen[0].body["messages"][0]["content"]
    out = score(ev, query="q", context=[], ground_truth="X and Y")
    assert out["context_recall"] == 0.0 and len(seen) == 1  # empty context: no call
    fake.handler = lambda req: claims_reply()
    out = score(ev, query="q", context=["a"], ground_truth="Hi.")
    assert out["context_recall_status"] == "failed" and "no claim" in out["context_recall_error"]


def test_context_precision_with_and_without_reference(fake: FakeOpenAIServer) -> None:
    prompts: list[str] = []

    def handler(req: FakeRequest) -> str:
        prompts.append(req.body["messages"][0]["content"])
        return json.dumps({"documents": [{"rank": k, "reason": "r", "verdict": v} for k, v in
                                         enumerate(["useful", "not_useful", "useful"], 1)]})

    fake.handler = handler
    ev = registry.create("context_precision", model_config=config(fake))
    out = score(ev, query="q", context=["a", "b", "c"], ground_truth="g")
    assert out["context_precision"] == pytest.approx((1 + 2 / 3) / 2)
    assert [c["verdict"] for c in out["context_precision_properties"]["chunks"]] == ["useful", "not_useful",
                                                                                      "useful"]
    assert "reference answer" in prompts[-1] and fake.count == 1  # one call for three chunks
    out = score(ev, query="q", context=["a", "b", "c"], response="r")
    assert out["context_precision_properties"]["judged_for"] == "response" and "response" in prompts[-1]
    assert score(ev, query="q", context=[], response="r")["context_precision"] == 0.0


def test_partial_chunk_verdicts_repaired_then_failed(fake: FakeOpenAIServer) -> None:
    fake.handler = lambda req: json.dumps({"documents": [{"rank": 1, "reason": "r", "verdict": "useful"}]})
    ev = registry.create("context_precision", model_config=config(fake))
    out = score(ev, query="q", context=["a", "b", "c"], ground_truth="g")
    assert fake.count == 2  # the one repair
    assert out["context_precision_status"] == "failed"
    assert "ranked 2, 3 (of 3)" in out["context_precision_error"]


def test_partial_claim_verdicts_repaired_once(fake: FakeOpenAIServer) -> None:
    replies = iter([
        json.dumps({"verdicts": [{"index": 1, "reason": "r", "verdict": "supported", "document": "doc-1"}]}),
        json.dumps({"verdicts": [{"index": 1, "reason": "r", "verdict": "supported", "document": "doc-1"},
                                 {"index": 2, "reason": "r", "verdict": "unsupported", "document": ""}]}),
    ])
    fake.handler = lambda req: next(replies)
    client = get_judge_client(config(fake))
    report = asyncio.run(verify_claims(client, ["A", "B"], [{"id": "doc-1", "content": "A"}]))
    assert [v.supported for v in report.verdicts] == [True, False] and report.properties["repaired"]
    fake.handler = lambda req: json.dumps({"verdicts": []})
    with pytest.raises(JudgeReplyError, match=r"no verdict for claims 1, 2 \(of 2\)"):
        asyncio.run(verify_claims(client, ["C", "D"], [{"id": "doc-1", "content": "A"}]))


def test_unparseable_reply_fails_after_one_repair(fake: FakeOpenAIServer) -> None:
    fake.handler = lambda req: "not json at all"
    ev = registry.create("faithfulness", model_config=config(fake))
    out = score(ev, context="A.", response="A.")
    assert fake.count == 2 and out["faithfulness_status"] == "failed"
    assert "no JSON object" in out["faithfulness_error"]


def test_entity_recall_and_answer_correctness(fake: FakeOpenAIServer) -> None:
    def handler(req: FakeRequest) -> str:
        if schema_name(req) == "rag_answer_correctness":
            claim = lambda c, ok: {"claim": c, "reason": "", "verdict": "supported" if ok else "unsupported"}  # noqa: E731
            return json.dumps({"response_claims": [claim("A", True), claim("B", False)],
                               "reference_claims": [claim("A", True), claim("C", False), claim("D", False)]})
        return claims_reply(("Paris", True, "doc-1"), ("1889", False, ""), ("Paris", True, "doc-1"))

    fake.handler = handler
    ev = registry.create("context_entity_recall", model_config=config(fake))
    out = score(ev, context=["Paris"], ground_truth="Paris, 1889")
    assert out["context_entity_recall"] == 0.5  # distinct entities: Paris found, 1889 missing
    ac = AnswerCorrectnessEvaluator(config(fake), weights=(1.0, 0.0))
    out = score(ac, query="q", response="A, B", ground_truth="A, C, D")
    p, r = 1 / 2, 1 / 3
    assert out["answer_correctness"] == pytest.approx(2 * p * r / (p + r))
    ac = AnswerCorrectnessEvaluator(config(fake), embedding_config=config(fake))
    sim = registry.create("answer_similarity", model_config=config(fake))
    out = score(ac, query="q", response="A, B", ground_truth="A, C, D")
    s = score(sim, response="A, B", ground_truth="A, C, D")["answer_similarity"]
    assert 0 <= s <= 1
    assert out["answer_correctness"] == pytest.approx(0.75 * 2 * p * r / (p + r) + 0.25 * s)


def test_summary_counts_claims(fake: FakeOpenAIServer, tmp_path: Path) -> None:
    fake.handler = lambda req: claims_reply(("A", True, "doc-1"), ("B", False, ""))
    data = [{"query": "q", "context": "A", "response": f"A B {i}"} for i in range(3)]
    ev = registry.create("faithfulness", model_config=config(fake))
    res = evaluate(data=data, evaluators={"faithfulness": ev}, store=tmp_path / "runs.db")
    assert res.summary["faithfulness.faithfulness"]["mean"] == 0.5
    assert res.summary["faithfulness.faithfulness_claims"]["total"] == 6
    assert fake.count == 3


def test_dry_run_counts_one_call_per_row_per_metric() -> None:
    from touchstone.engine.dryrun import estimate
    from touchstone.evaluators.rag import (
        AnswerCorrectnessEvaluator,
        ContextEntityRecallEvaluator,
        ContextPrecisionEvaluator,
        ContextRecallEvaluator,
        FaithfulnessEvaluator,
    )

    cfg = {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test"}
    classes = [FaithfulnessEvaluator, ContextRecallEvaluator, ContextPrecisionEvaluator,
               ContextEntityRecallEvaluator]
    evs: dict[str, Any] = {cls.metric: cls(cfg) for cls in classes}
    evs["answer_correctness"] = AnswerCorrectnessEvaluator(cfg, weights=(1.0, 0.0))
    data = [{"query": "q", "context": ["a", "b", "c"], "response": "r", "ground_truth": "g"}] * 4
    est = estimate(data=data, evaluators=evs)
    for name, ev in evs.items():
        assert est.per_evaluator[name]["calls"] == 4 * ev.calls_per_row == 4, name
        assert est.per_evaluator[name]["prompt_tokens"] > 0
