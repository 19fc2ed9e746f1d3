"""Ranking metrics against pytrec_eval and ranx, and the document-retrieval family against the
compatible SDK's own outputs (recorded in ``test_ranking_document_retrieval_sdk.json``; the script
that produced them with ``azure-ai-evaluation`` is stored in the file as ``generator_source``)."""

from __future__ import annotations

import json
import math
import pickle
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from touchstone.evaluators import registry
from touchstone.evaluators.ranking import DocumentRetrievalEvaluator, RankingEvaluator

TOL = 1e-9
N_CASES = 1200


def _random_cases(seed: int, n: int = N_CASES) -> list[dict[str, Any]]:
    """Random and adversarial queries: graded and binary labels, empty lists, no relevant document,
    k larger than the list, duplicates, labels 0 only, long lists."""
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = []
    for i in range(n):
        pool = [f"d{j}" for j in range(rng.randint(1, 60))]
        kind = i % 10
        n_ret = {0: 0, 1: 1, 2: 2}.get(kind, rng.randint(0, len(pool)))
        retrieved = rng.sample(pool, n_ret)
        if kind == 3 and retrieved:  # duplicates: a document retrieved twice counts at its first rank
            retrieved = retrieved + rng.sample(retrieved, rng.randint(1, len(retrieved)))
            rng.shuffle(retrieved)
        n_gt = rng.randint(1, min(len(pool), 15))
        judged = rng.sample(pool, n_gt)
        if kind == 4:
            labels = {d: 0 for d in judged}  # no relevant document
        elif kind == 5:
            labels = {d: 1 for d in judged}  # binary
        else:
            labels = {d: rng.randint(0, 4) for d in judged}
        cases.append({"retrieved": retrieved, "labels": labels})
    return cases


def _row(case: dict[str, Any], as_objects: bool) -> dict[str, Any]:
    if as_objects:
        gt: list[Any] = [{"document_id": d, "query_relevance_label": v} for d, v in case["labels"].items()]
    else:
        gt = [d for d, v in case["labels"].items() if v > 0]  # binary form: relevant ids only
    return {"retrieval_ground_truth": gt, "retrieved_documents": list(case["retrieved"])}


def _reference_run(case: dict[str, Any]) -> dict[str, float]:
    """The ranking for the references: first occurrence of each id, strictly decreasing scores (so
    their own tie-breaking never applies)."""
    ids = list(dict.fromkeys(case["retrieved"]))
    return {d: float(len(ids) - r) for r, d in enumerate(ids)}


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    return _random_cases(11)


def _pytrec(cases: list[dict[str, Any]], measures: set[str]) -> list[dict[str, float]]:
    import pytrec_eval

    # pytrec_eval drops queries without a judged or without a retrieved document; give each one a
    # sentinel that changes nothing (a label 0 judgement, a retrieved document ranked last).
    qrels = {f"q{i}": {**c["labels"], "__judged": 0} for i, c in enumerate(cases)}
    run = {}
    for i, c in enumerate(cases):
        r = _reference_run(c)
        r["__sentinel"] = -1.0
        run[f"q{i}"] = r
    res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    return [res[f"q{i}"] for i in range(len(cases))]


def test_against_pytrec_eval_linear_gain(cases: list[dict[str, Any]]) -> None:
    ks = [1, 3, 5, 10, 100]
    ev = RankingEvaluator(k=ks, gain="linear")
    ours = ev.score_batch([_row(c, True) for c in cases])
    ref = _pytrec(cases, {"P", "recall", "ndcg_cut", "recip_rank", "map"})
    # P and recall with a sentinel retrieved last: k beyond the real list would see it, but it is not
    # relevant, so counts are unchanged; precision divides by k in both.
    pairs = [("mrr", "recip_rank"), ("map", "map")]
    for k in ks:
        pairs += [
            (f"precision_at_{k}", f"P_{k}"),
            (f"recall_at_{k}", f"recall_{k}"),
            (f"ndcg_at_{k}", f"ndcg_cut_{k}"),
        ]
    checked = 0
    for o, r in zip(ours, ref, strict=True):
        for a, b in pairs:
            if b not in r:
                continue
            assert o[a] == pytest.approx(r[b], abs=TOL), (a, o[a], r[b])
            checked += 1
    assert checked >= N_CASES * 10


def _ranx(cases: list[dict[str, Any]], metrics: list[str]) -> dict[str, Any]:
    from ranx import Qrels, Run, evaluate

    qrels = Qrels({f"q{i:05d}": ({**c["labels"]} or {"__none": 0}) for i, c in enumerate(cases)})
    run = Run({f"q{i:05d}": (_reference_run(c) or {"__sentinel": 0.0}) for i, c in enumerate(cases)})
    return evaluate(qrels, run, metrics, return_mean=False, make_comparable=True)  # type: ignore[no-any-return]


def test_against_ranx_both_gains_and_thresholds(cases: list[dict[str, Any]]) -> None:
    ks = [1, 3, 10, 70]
    names = []
    for k in ks:
        names += [f"ndcg@{k}", f"ndcg_burges@{k}", f"precision@{k}", f"recall@{k}", f"hit_rate@{k}"]
        names += [f"ndcg@{k}-l2", f"ndcg_burges@{k}-l3", f"precision@{k}-l2", f"recall@{k}-l3"]
    names += ["mrr", "map", "mrr-l2", "map-l3"]
    ref = _ranx(cases, names)
    rows = [_row(c, True) for c in cases]
    evs = {
        ("exponential", 1): RankingEvaluator(k=ks),
        ("linear", 1): RankingEvaluator(k=ks, gain="linear"),
        ("linear", 2): RankingEvaluator(k=ks, gain="linear", relevance_threshold=2),
        ("exponential", 3): RankingEvaluator(k=ks, relevance_threshold=3),
        ("exponential", 2): RankingEvaluator(k=ks, relevance_threshold=2),
    }
    outs = {key: ev.score_batch(rows) for key, ev in evs.items()}

    def check(ours: Sequence[Mapping[str, Any]], key: str, theirs: Any) -> None:
        for i, o in enumerate(ours):
            assert o[key] == pytest.approx(float(theirs[i]), abs=TOL), (i, key, o[key], float(theirs[i]))

    for k in ks:
        check(outs[("linear", 1)], f"ndcg_at_{k}", ref[f"ndcg@{k}"])
        check(outs[("exponential", 1)], f"ndcg_at_{k}", ref[f"ndcg_burges@{k}"])
        check(outs[("exponential", 1)], f"precision_at_{k}", ref[f"precision@{k}"])
        check(outs[("exponential", 1)], f"recall_at_{k}", ref[f"recall@{k}"])
        check(outs[("exponential", 1)], f"hit_rate_at_{k}", ref[f"hit_rate@{k}"])
        check(outs[("linear", 2)], f"ndcg_at_{k}", ref[f"ndcg@{k}-l2"])
        check(outs[("exponential", 3)], f"ndcg_at_{k}", ref[f"ndcg_burges@{k}-l3"])
        check(outs[("linear", 2)], f"precision_at_{k}", ref[f"precision@{k}-l2"])
        check(outs[("exponential", 3)], f"recall_at_{k}", ref[f"recall@{k}-l3"])
    check(outs[("exponential", 1)], "mrr", ref["mrr"])
    check(outs[("exponential", 1)], "map", ref["map"])
    check(outs[("exponential", 2)], "mrr", ref["mrr-l2"])
    check(outs[("exponential", 3)], "map", ref["map-l3"])


def test_binary_id_lists_equal_labels_one(cases: list[dict[str, Any]]) -> None:
    ev = RankingEvaluator(k=[2, 5])
    binary_cases = [
        {"retrieved": c["retrieved"], "labels": {d: 1 for d, v in c["labels"].items() if v > 0}}
        for c in cases
    ]
    a = ev.score_batch([_row(c, False) for c in cases])
    b = ev.score_batch([_row(c, True) for c in binary_cases])
    assert a == b


def test_edge_cases_defined() -> None:
    ev = RankingEvaluator(k=[1, 3, 10])
    keys = ev.output_keys()
    # empty retrieved list, and no relevant document: every metric 0
    for row in (
        {"retrieval_ground_truth": ["a"], "retrieved_documents": []},
        {
            "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 0}],
            "retrieved_documents": ["a", "b"],
        },
    ):
        out = ev(**row)
        assert set(out) == set(keys)
        assert all(out[k] == 0.0 for k in keys)
    # k larger than the list: precision divides by k; recall and ndcg use what there is
    out = ev(retrieval_ground_truth=["a"], retrieved_documents=["a"])
    assert out["precision_at_10"] == pytest.approx(0.1)
    assert out["recall_at_10"] == out["ndcg_at_10"] == out["mrr"] == out["map"] == out["hit_rate_at_1"] == 1.0
    # ties in relevance_score keep the original order (stable)
    docs = [{"document_id": d, "relevance_score": 0.5} for d in ["x", "a", "y"]]
    out = ev(retrieval_ground_truth=["a"], retrieved_documents=docs)
    assert out["mrr"] == pytest.approx(0.5)
    docs = [{"document_id": "y", "relevance_score": 0.1}, *docs]
    out = ev(retrieval_ground_truth=["y"], retrieved_documents=docs)
    assert out["mrr"] == pytest.approx(1 / 3)  # sorted x, a, y (0.5, stable), y (0.1): y counts at rank 3
    # duplicates count once
    out = ev(retrieval_ground_truth=["a"], retrieved_documents=["a", "a", "a"])
    assert out["precision_at_3"] == pytest.approx(1 / 3)


def test_options_and_failures() -> None:
    with pytest.raises(ValueError):
        RankingEvaluator(k=0)
    with pytest.raises(ValueError):
        RankingEvaluator(gain="log")
    with pytest.raises(ValueError):
        RankingEvaluator(relevance_threshold=0)
    ev = RankingEvaluator(k=5, threshold=0.5)
    out = ev(retrieval_ground_truth=["a"], retrieved_documents=["a"])
    assert out["ndcg_at_5"] == 1.0 and out["ranking_result"] == "pass" and out["ranking_threshold"] == 0.5
    bad = ev.score_batch(
        [
            {"retrieval_ground_truth": [{"document_id": "a"}], "retrieved_documents": ["a"]},
            {"retrieval_ground_truth": ["a"], "retrieved_documents": ["a"]},
        ]
    )
    assert "ranking_error" in bad[0] and bad[1]["ndcg_at_5"] == 1.0
    assert pickle.loads(pickle.dumps(ev)).options() == ev.options()
    assert registry.get("ranking") is RankingEvaluator
    assert registry.get("document_retrieval") is DocumentRetrievalEvaluator


def test_batch_of_100_documents_is_vectorised() -> None:
    rng = random.Random(5)
    rows = []
    for _ in range(2000):
        labels = {f"d{j}": rng.randint(0, 3) for j in rng.sample(range(300), 20)}
        rows.append(
            {
                "retrieval_ground_truth": [
                    {"document_id": d, "query_relevance_label": v} for d, v in labels.items()
                ],
                "retrieved_documents": [f"d{j}" for j in rng.sample(range(300), 100)],
            }
        )
    ev = RankingEvaluator(k=[10])
    batch = ev.score_batch(rows)
    single = [ev(**r) for r in rows[:50]]
    assert batch[:50] == single


# ------------------------------------------------------------------------------ document retrieval
SDK_FILE = Path(__file__).with_name("test_ranking_document_retrieval_sdk.json")
DR_KEYS = [
    "ndcg@3",
    "xdcg@3",
    "fidelity",
    "top1_relevance",
    "top3_max_relevance",
    "holes",
    "holes_ratio",
    "total_retrieved_documents",
    "total_ground_truth_documents",
]


def _dr_definition(case: dict[str, Any]) -> dict[str, float]:
    """The published definitions, written out: sort by relevance_score (descending, stable),
    unlabelled = 0; ndcg@3 with gain 2^l - 1 and discount log2(rank + 1) against the ideal labels;
    xdcg@3 = sum 25 l 0.6^(rank-1) / sum 0.6^(rank-1); fidelity = weighted count of labels above the
    minimum, weight 2^(l+1) - 1, retrieved over ideal; holes = unlabelled retrieved documents."""
    labels = {g["document_id"]: g["query_relevance_label"] for g in case["retrieval_ground_truth"]}
    scores = {d["document_id"]: d["relevance_score"] for d in case["retrieved_documents"]}
    ranked = sorted(scores, key=lambda d: -scores[d])
    got = [labels.get(d, 0) for d in ranked]
    ideal = sorted(labels.values(), reverse=True)
    n = len(case["retrieved_documents"])
    holes = len([d for d in ranked if d not in labels])
    zero: dict[str, float] = {k: 0 for k in DR_KEYS}
    zero.update(holes=holes, holes_ratio=holes / n if n else 0, total_retrieved_documents=n)
    zero["total_ground_truth_documents"] = len(case["retrieval_ground_truth"])
    if not ranked or not any(got):
        return zero

    def dcg(ls: list[int]) -> float:
        total: float = sum((2**lab - 1) / math.log2(r + 1) for r, lab in zip(range(1, 4), ls, strict=False))
        return total

    def weight(ls: list[int]) -> float:
        total: float = sum(2 ** (lab + 1) - 1 for lab in ls if lab > case["label_min"])
        return total

    return {
        **zero,
        "ndcg@3": dcg(got) / dcg(ideal),
        "xdcg@3": sum(25 * lab * 0.6 ** (r - 1) for r, lab in zip(range(1, 4), got, strict=False))
        / (1 + 0.6 + 0.36),
        "fidelity": weight(got) / weight(ideal) if weight(ideal) else 0.0,
        "top1_relevance": got[0],
        "top3_max_relevance": max(got[:3]),
    }


@pytest.fixture(scope="module")
def sdk_cases() -> dict[str, Any]:
    return json.loads(SDK_FILE.read_text())  # type: ignore[no-any-return]


def test_document_retrieval_equals_sdk_and_definition(sdk_cases: dict[str, Any]) -> None:
    assert len(sdk_cases["cases"]) >= 1000
    evs: dict[tuple[int, int], DocumentRetrievalEvaluator] = {}
    for case in sdk_cases["cases"]:
        key = (case["label_min"], case["label_max"])
        ev = evs.setdefault(
            key, DocumentRetrievalEvaluator(ground_truth_label_min=key[0], ground_truth_label_max=key[1])
        )
        out = ev(
            retrieval_ground_truth=case["retrieval_ground_truth"],
            retrieved_documents=case["retrieved_documents"],
        )
        definition = _dr_definition(case)
        for k in DR_KEYS:
            assert out[k] == pytest.approx(case["sdk"][k], abs=TOL), (k, out[k], case["sdk"][k], case)
            assert out[k] == pytest.approx(definition[k], abs=TOL), (k, out[k], definition[k])
            assert out["document_retrieval_properties"][k] == out[k]
        assert out["document_retrieval"] == out["document_retrieval_score"] == out["ndcg@3"]


def test_document_retrieval_sdk_nan_cases_give_the_sdks_nan(sdk_cases: dict[str, Any]) -> None:
    # where the SDK divides by a zero weight (no ground-truth label above the minimum), fidelity is
    # NaN there, and so here: the value of the SDK's key, failing its threshold
    for case in sdk_cases["sdk_nan_cases"]:
        ev = DocumentRetrievalEvaluator(
            ground_truth_label_min=case["label_min"], ground_truth_label_max=case["label_max"]
        )
        out = ev(
            retrieval_ground_truth=case["retrieval_ground_truth"],
            retrieved_documents=case["retrieved_documents"],
        )
        assert math.isnan(out["fidelity"]) and out["fidelity_passed"] is False
        assert not math.isnan(out["document_retrieval"])


def test_document_retrieval_keys_thresholds_and_example() -> None:
    ev = DocumentRetrievalEvaluator()
    out = ev(
        retrieval_ground_truth=[
            {"document_id": "a", "query_relevance_label": 3},
            {"document_id": "b", "query_relevance_label": 1},
        ],
        retrieved_documents=[
            {"document_id": "b", "relevance_score": 2.0},
            {"document_id": "a", "relevance_score": 1.0},
            {"document_id": "c", "relevance_score": 0.5},
        ],
    )
    # values and keys produced by azure-ai-evaluation 1.18.10 on the same input
    assert out["ndcg@3"] == pytest.approx(0.7098097413968655, abs=TOL)
    assert out["xdcg@3"] == pytest.approx(35.714285714285715, abs=TOL)
    assert (out["fidelity"], out["top1_relevance"], out["top3_max_relevance"], out["holes"]) == (1.0, 1, 3, 1)
    assert out["holes_ratio"] == pytest.approx(1 / 3)
    sdk_top = [
        "document_retrieval",
        "document_retrieval_score",
        "document_retrieval_passed",
        "document_retrieval_result",
        "document_retrieval_reason",
        "document_retrieval_status",
        "document_retrieval_threshold",
        "document_retrieval_properties",
    ]
    assert all(k in out for k in sdk_top)
    thresholds = {
        "ndcg@3": 0.5,
        "xdcg@3": 50.0,
        "fidelity": 0.5,
        "top1_relevance": 50.0,
        "top3_max_relevance": 50.0,
        "holes": 0,
        "holes_ratio": 0,
        "total_retrieved_documents": 50,
        "total_ground_truth_documents": 50,
    }
    for k, t in thresholds.items():
        assert out[f"{k}_threshold"] == t
        assert out[f"{k}_higher_is_better"] is (k not in ("holes", "holes_ratio"))
        for suffix in ("_result", "_passed", "_threshold", "_higher_is_better"):
            assert out["document_retrieval_properties"][k + suffix] == out[k + suffix]
    assert out["ndcg@3_result"] == "pass" and out["xdcg@3_result"] == "fail" and out["holes_result"] == "fail"
    # empty retrieved list: zeros, as the SDK
    out = ev(retrieval_ground_truth=["a"], retrieved_documents=[])
    assert out["ndcg@3"] == 0 and out["holes"] == 0 and out["holes_ratio"] == 0
    # a label out of range is a failed row, not a crash of the batch
    outs = ev.score_batch(
        [
            {
                "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 7}],
                "retrieved_documents": ["a"],
            }
        ]
    )
    assert "document_retrieval_error" in outs[0]
    with pytest.raises(ValueError):
        DocumentRetrievalEvaluator(ground_truth_label_min=3, ground_truth_label_max=3)
