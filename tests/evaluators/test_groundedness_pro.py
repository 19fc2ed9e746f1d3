"""GroundednessProEvaluator: the SDK's keys and types, sentence verdicts equal to their definition on
a tiny randomly initialised NLI cross-encoder built here (no weights are downloaded), the edge cases'
documented outcomes, the judge backend on the fake server (one call per row), and evaluate()'s
``groundedness_pro_passing_rate``."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone import evaluate
from touchstone.embeddings.deps import MissingDependencyError
from touchstone.errors import ConfigurationError
from touchstone.evaluators import registry
from touchstone.evaluators.groundedness_pro import (
    GroundednessProEvaluator,
    entailment_index,
    split_sentences,
)

pytest.importorskip("sentence_transformers")

WORDS = ["the", "a", "is", "of", "in", "and", "lantern", "runs", "hours", "battery", "paris", "capital",
         "france", "trailglow", "nightjar", "forty", "twelve", "light", "long", "charge"]
LABELS = {0: "contradiction", 1: "entailment", 2: "neutral"}
CONTEXT = ["The Trailglow runs forty hours.", "The Nightjar runs twelve hours.", "Paris is the capital."]
RESPONSE = "The Trailglow runs forty hours. Paris is the capital of France. The battery is long."


def build_model(path: Path, bias: list[float] | None = None) -> Path:
    """A tiny BERT cross-encoder with three NLI labels, random weights (seeded); ``bias`` fixes the
    classifier's output (zero weights) so that every pair gets the same label."""
    import torch
    import transformers

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, ".", ","]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    fast_tokenizer: Any = getattr(transformers, "BertTokenizerFast")  # noqa: B009 (not in the stubs)
    tokenizer = fast_tokenizer(vocab_file=str(path / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    sizes: dict[str, Any] = {
        "vocab_size": len(vocab), "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 128, "num_labels": 3, "id2label": LABELS,
        "label2id": {v: k for k, v in LABELS.items()},
    }
    config = transformers.BertConfig(**sizes)
    model = transformers.BertForSequenceClassification(config)
    if bias is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nli")
    return {"random": build_model(root / "random"),
            "entails": build_model(root / "entails", [0.0, 5.0, 0.0]),
            "contradicts": build_model(root / "contradicts", [5.0, 0.0, 0.0])}


def definition(model_dir: Path, response: str, context: list[str]) -> list[tuple[bool, str | None]]:
    """Each sentence is grounded when the argmax label of (document, sentence) is entailment for some
    document; the document named is the entailing one with the highest entailment probability."""
    from sentence_transformers import CrossEncoder

    ce = CrossEncoder(str(model_dir))
    out = []
    for sentence in split_sentences(response):
        probs = np.asarray(ce.predict([(doc, sentence) for doc in context], apply_softmax=True))
        entailing = [i for i in range(len(context)) if int(probs[i].argmax()) == 1]
        best = max(entailing, key=lambda i: probs[i][1]) if entailing else None
        out.append((bool(entailing), None if best is None else f"doc-{best + 1}"))
    return out


def test_split_sentences() -> None:
    assert split_sentences(RESPONSE) == ["The Trailglow runs forty hours.", "Paris is the capital of France.",
                                         "The battery is long."]
    assert split_sentences("Dr. Smith arrived. He left.") == ["Dr. Smith arrived.", "He left."]
    assert split_sentences("  ") == [] and split_sentences("no punctuation") == ["no punctuation"]


def test_entailment_index() -> None:
    assert entailment_index(LABELS) == 1
    assert entailment_index({"0": "ENTAILMENT", "1": "not_entailment"}) == 0
    with pytest.raises(ConfigurationError, match="no 'entailment'"):
        entailment_index({0: "positive", 1: "negative"})


def test_sentence_verdicts_equal_definition(models: dict[str, Path]) -> None:
    ev = GroundednessProEvaluator(model=models["random"])
    responses = [RESPONSE, "The Nightjar runs twelve hours. Light.", "Forty. Twelve. The lantern is long."]
    outs = ev.score_batch([{"response": r, "context": CONTEXT} for r in responses])  # pairs in one predict
    for response, out in zip(responses, outs, strict=True):
        expected = definition(models["random"], response, CONTEXT)
        sentences = out["groundedness_pro_properties"]["sentences"]
        assert [(s["verdict"] == "grounded", s["document"]) for s in sentences] == expected
        assert out["groundedness_pro_label"] is all(g for g, _ in expected)
        assert out.scores[0].value == (1.0 if out["groundedness_pro_label"] else 0.0)


def test_sdk_keys_and_reason(models: dict[str, Path]) -> None:
    grounded = GroundednessProEvaluator(model=models["entails"])(response=RESPONSE, context=CONTEXT,
                                                                 query="q?")
    assert list(grounded)[:2] == ["groundedness_pro_label", "groundedness_pro_reason"]
    assert grounded["groundedness_pro_label"] is True
    reason = grounded["groundedness_pro_reason"]
    assert reason == "All 3 sentences of the response are grounded in the context."
    bad = GroundednessProEvaluator(model=models["contradicts"])(response=RESPONSE, context=CONTEXT)
    assert bad["groundedness_pro_label"] is False
    assert bad["groundedness_pro_reason"].startswith("3 of 3 sentences are not grounded in the context: ")
    assert "Paris is the capital of France." in bad["groundedness_pro_reason"]
    assert {s["label"] for s in bad["groundedness_pro_properties"]["sentences"]} == {"contradiction"}


@pytest.mark.parametrize(("response", "context", "label", "outcome"), [
    ("", CONTEXT, True, "no_sentences"),
    ("   \n ", CONTEXT, True, "no_sentences"),
    ("The Trailglow runs forty hours.", "", False, "empty_context"),
    ("The Trailglow runs forty hours.", [], False, "empty_context"),
    ("The Trailglow runs forty hours.", ["  "], False, "empty_context"),
])
def test_edge_cases(models: dict[str, Path], response: str, context: Any, label: bool, outcome: str) -> None:
    out = GroundednessProEvaluator(model=models["entails"]).score_batch([{"response": response,
                                                                         "context": context}])[0]
    assert out["groundedness_pro_label"] is label
    assert out["groundedness_pro_properties"]["outcome"] == outcome
    counts = {s.name: s.value for s in out.scores[1:]}
    assert counts[f"groundedness_pro_{outcome}"] == 1.0


def test_evaluate_passing_rate_and_counts(models: dict[str, Path], tmp_path: Path) -> None:
    rows = [{"response": RESPONSE, "context": CONTEXT}, {"response": "", "context": CONTEXT},
            {"response": "Forty hours.", "context": ""}, {"response": "The lantern.", "context": CONTEXT}]
    result = evaluate(data=rows, evaluators={"gp": GroundednessProEvaluator(model=models["entails"])},
                      store=None)
    labels = [r["outputs.gp.groundedness_pro_label"] for r in result.rows]
    assert labels == [True, True, False, True]
    assert result.metrics["gp.groundedness_pro_passing_rate"] == pytest.approx(0.75)
    assert "gp.groundedness_pro_label" not in result.metrics
    summary = result.summary
    assert summary["gp.groundedness_pro_label"]["mean"] == pytest.approx(0.75)
    assert summary["gp.groundedness_pro_sentences"]["total"] == 3 + 0 + 1 + 1
    assert summary["gp.groundedness_pro_no_sentences"]["total"] == 1
    assert summary["gp.groundedness_pro_empty_context"]["total"] == 1
    assert not any(isinstance(v, float) and math.isnan(v) for v in labels)


def test_configuration_errors(models: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="needs a local NLI cross-encoder"):
        GroundednessProEvaluator(credential=object(), azure_ai_project="https://x")
    with pytest.raises(ConfigurationError, match="backend"):
        GroundednessProEvaluator(model=models["random"], backend="service")
    with pytest.raises(ConfigurationError, match="neither a directory"):
        GroundednessProEvaluator(model="/no/such/model/dir")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"pip install 'touchstone-genai\[local\]'"):
        GroundednessProEvaluator(model=models["random"])


def test_model_options_and_sdk_threshold(models: dict[str, Path]) -> None:
    ev = GroundednessProEvaluator(None, None, model=models["random"], threshold=4)
    opts = ev.options()
    assert opts["backend"] == "nli" and opts["threshold"] == 4 and opts["path"] == str(models["random"])
    assert ev.is_async is False and ev.needs_judge is False


# ---------------------------------------------------------------------------- judge backend
def verdicts_reply(req: FakeRequest, unsupported: set[int]) -> str:
    count = len([line for line in req.last_user.splitlines() if line[:1].isdigit() and ". " in line])
    return json.dumps({"verdicts": [
        {"index": i, "reason": f"r{i}", "verdict": "unsupported" if i in unsupported else "supported",
         "document": "" if i in unsupported else "doc-1"} for i in range(1, count + 1)]})


def test_judge_backend_one_call_per_row() -> None:
    with FakeOpenAIServer() as fake:
        fake.handler = lambda req: verdicts_reply(req, {2})
        cfg = {"model": "judge", "base_url": fake.base_url, "api_key": "sk-test"}
        ev = GroundednessProEvaluator(backend="judge", model_config=cfg)
        assert ev.is_async and ev.needs_judge
        out = asyncio.run(ev.ascore({"response": RESPONSE, "context": CONTEXT}))
        assert fake.count == 1
        assert out["groundedness_pro_label"] is False
        assert out["groundedness_pro_reason"] == ("1 of 3 sentences are not grounded in the context: "
                                                  "Paris is the capital of France.")
        sentences = out["groundedness_pro_properties"]["sentences"]
        assert [s["verdict"] for s in sentences] == ["grounded", "ungrounded", "grounded"]
        assert sentences[0]["document"] == "doc-1" and sentences[1]["reason"] == "r2"
        assert "sk-test" not in json.dumps(out)

        fake.handler = lambda req: verdicts_reply(req, set())
        ok = registry.create("groundedness_pro", model_config=cfg)
        out = asyncio.run(ok.ascore({"response": "The Nightjar runs twelve hours.", "context": CONTEXT}))
        assert out["groundedness_pro_label"] is True

        fake.handler = lambda req: json.dumps({"verdicts": []})
        out = asyncio.run(ok.ascore({"response": "Forty. Twelve.", "context": CONTEXT}))
        assert "no verdict for claims 1, 2" in out["groundedness_pro_error"]

        calls = fake.count
        out = asyncio.run(ok.ascore({"response": "", "context": CONTEXT}))
        assert out["groundedness_pro_label"] is True and fake.count == calls  # no call for nothing
