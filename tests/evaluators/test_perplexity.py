"""perplexity against a direct torch computation of exp(mean NLL), on a tiny randomly initialised
GPT-2 with its own word-level tokenizer, both built here (nothing is downloaded)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from touchstone.errors import ConfigurationError  # noqa: E402
from touchstone.evaluators.perplexity import PerplexityEvaluator  # noqa: E402

CORPUS = [
    "the cat sat on the mat",
    "a dog ran in the park",
    "the quick brown fox jumps over the lazy dog",
    "cats and dogs are friends",
    "it rained all day in the city",
]
TEXTS = [
    "the cat sat on the mat",
    "a dog ran",
    "the quick brown fox jumps over the lazy dog and the cat",
    "cats",
    "unseen words here",
    "the cat sat on the mat",
]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        CORPUS, trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<bos>", "<eos>"])
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<bos>", eos_token="<eos>"
    )
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=32,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
    )
    model = transformers.GPT2LMHeadModel(config)
    path = tmp_path_factory.mktemp("tiny-gpt2")
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def reference_nll(path: Path, text: str, add_start_token: bool = True) -> tuple[float, int]:
    """Sum of the NLL of each token given the ones before it, and how many tokens were predicted:
    one text at a time, no batching, no padding."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.GPT2LMHeadModel.from_pretrained(path).eval()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if add_start_token:
        ids = [tokenizer.bos_token_id, *ids]
    x = torch.tensor([ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(x).logits[0].double(), dim=-1)
    nll = -sum(float(logp[i, ids[i + 1]]) for i in range(len(ids) - 1))
    return nll, len(ids) - 1


def test_per_text_and_corpus_perplexity_equal_direct_torch(tiny_lm: Path) -> None:
    ev = PerplexityEvaluator(model=tiny_lm, batch_size=4)
    outs = ev.score_batch([{"response": t} for t in TEXTS])
    refs = [reference_nll(tiny_lm, t) for t in TEXTS]
    for out, (nll, n) in zip(outs, refs, strict=True):
        assert "perplexity_error" not in out
        assert out["perplexity"] == pytest.approx(math.exp(nll / n), rel=1e-5)
        assert out["perplexity_properties"]["tokens"] == n
        assert "perplexity_result" not in out  # no default threshold
    corpus = ev.corpus_metrics([{"response": t} for t in TEXTS], outs)
    total_nll = sum(r[0] for r in refs)
    total_tokens = sum(r[1] for r in refs)
    assert corpus["corpus_perplexity"] == pytest.approx(math.exp(total_nll / total_tokens), rel=1e-5)
    # a single call gives the same number as the batched path
    assert ev(response=TEXTS[2])["perplexity"] == pytest.approx(outs[2]["perplexity"], rel=1e-5)


def test_without_start_token_and_empty_texts(tiny_lm: Path) -> None:
    ev = PerplexityEvaluator(model=tiny_lm, add_start_token=False, threshold=1000.0)
    outs = ev.score_batch([{"response": "a dog ran in the park"}, {"response": "cats"}, {"response": ""}])
    nll, n = reference_nll(tiny_lm, "a dog ran in the park", add_start_token=False)
    assert outs[0]["perplexity"] == pytest.approx(math.exp(nll / n), rel=1e-5)
    assert outs[0]["perplexity_result"] == "pass"  # lower is better
    assert "no token to predict" in outs[1]["perplexity_error"]
    assert "no token to predict" in outs[2]["perplexity_error"]
    with_bos = PerplexityEvaluator(model=tiny_lm).score_batch([{"response": "cats"}, {"response": ""}])
    assert "perplexity" in with_bos[0] and "perplexity_error" in with_bos[1]


def test_too_long_text_fails_its_row_only_and_max_length_truncates(tiny_lm: Path) -> None:
    long_text = " ".join(["the cat sat on the mat"] * 10)  # 60 tokens > n_positions 32
    outs = PerplexityEvaluator(model=tiny_lm).score_batch([{"response": long_text}, {"response": "a dog"}])
    assert "at most 32" in outs[0]["perplexity_error"]
    assert "perplexity" in outs[1]
    cut = PerplexityEvaluator(model=tiny_lm, max_length=8)(response=long_text)
    nll, n = reference_nll(tiny_lm, "the cat sat on the mat the")  # 7 tokens + BOS = 8
    assert cut["perplexity"] == pytest.approx(math.exp(nll / n), rel=1e-5)


def test_needs_a_model() -> None:
    with pytest.raises(ConfigurationError, match="causal language model"):
        PerplexityEvaluator()
    with pytest.raises(ConfigurationError, match="never downloaded"):
        PerplexityEvaluator(model="no-such-org/no-such-model")


# ------------------------------------------------------------------- completions endpoint (echo)
def test_completions_endpoint_prompt_logprobs(
    tmp_path: Path, fake_openai: object, judge_config: dict[str, Any]
) -> None:
    from tests.fakes.openai_server import _tokens, fake_token_logprob

    from touchstone import evaluate

    texts = [f"the answer is {i % 6}, probably." for i in range(30)] + ["word"]
    ev = PerplexityEvaluator(model="fake-lm", model_config=judge_config)
    assert ev.is_async
    result = evaluate(data=[{"response": t} for t in texts], evaluators={"ppl": ev}, store=tmp_path / "r.db")
    total_nll, total_n = 0.0, 0
    for text, row in zip(texts[:-1], result["rows"], strict=False):
        tokens = _tokens(text)
        nll = -sum(fake_token_logprob(t) for t in tokens[1:])  # the first token has no log-probability
        assert row["outputs.ppl.perplexity"] == pytest.approx(math.exp(nll / (len(tokens) - 1)), rel=1e-9)
    for text in texts[:-1]:
        tokens = _tokens(text)
        total_nll -= sum(fake_token_logprob(t) for t in tokens[1:])
        total_n += len(tokens) - 1
    assert "no token to predict" in result["rows"][-1]["outputs.ppl.perplexity_error"]
    assert result["metrics"]["ppl.corpus_perplexity"] == pytest.approx(
        math.exp(total_nll / total_n), rel=1e-9
    )
    calls = [r for r in fake_openai.requests if r.path.endswith("/completions")]  # type: ignore[attr-defined]
    assert len(calls) <= 3 and sum(len(r.body["prompt"]) for r in calls) == 7  # distinct texts, batched
    assert all(r.body["echo"] and r.body["max_tokens"] == 0 and r.body["model"] == "fake-lm" for r in calls)
