"""``groundedness_pro``: is every sentence of the response grounded in the context?

The compatible SDK's ``GroundednessProEvaluator`` asks Azure's evaluation service; touchstone
decides it locally, sentence by sentence, with one of two backends:

* **NLI** (``model=<directory>``): a natural-language-inference cross-encoder (sentence-transformers
  ``CrossEncoder``, three labels read from the model's ``id2label``: contradiction / entailment /
  neutral). Each sentence of the response (nltk's Punkt splitter, English model) is paired with each
  retrieved document as premise; a sentence is grounded when some document *entails* it (the label
  with the highest probability). CPU/GPU-bound: the engine scores batches of rows, all their pairs in
  one batched ``predict``. Weights are never downloaded (a directory, or a model already in the
  Hugging Face cache).
* **judge** (``backend="judge"`` with ``model_config``): the response's sentences, numbered, are
  checked against the documents in one judge call per row (the claim verifier of
  :mod:`touchstone.evaluators.rag.claims`; a reply missing verdicts is repaired once, then the row
  fails naming them).

The response is grounded when every sentence is. Keys as the SDK's: ``groundedness_pro_label``
(bool) and ``groundedness_pro_reason`` (the ungrounded sentences listed), plus touchstone's
``groundedness_pro_properties`` (each sentence with its verdict and document, the outcome).
``evaluate()`` reports the share of grounded rows as ``groundedness_pro.groundedness_pro_passing_rate``,
as the SDK does. The main Score is 1.0 (grounded) or 0.0, passing when grounded.

Defined outcomes, never NaN (``properties["outcome"]``; each counted by a secondary Score whose
summary ``total`` is the number of such rows):

* ``sentences``: grounded when every sentence is entailed;
* ``no_sentences``: an empty response (or one of whitespace) asserts nothing: grounded;
* ``empty_context``: sentences but no document: not grounded, without calling the model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from touchstone.data.kinds import context_documents
from touchstone.errors import ConfigurationError, RunAbortedError
from touchstone.evaluators.base import MODEL_BATCH_ROWS, Evaluator, InputSpec, Tier, _run_coroutine
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome, Score

FEATURE = "groundedness_pro with an NLI model"
BACKENDS = ("nli", "judge")


@dataclass(frozen=True)
class SentenceVerdict:
    """One sentence of the response and whether a document grounds it."""

    sentence: str
    grounded: bool
    document: str | None = None
    label: str = ""
    """The NLI label with the highest probability against the best document (or the judge's verdict)."""
    probability: float | None = None
    """The entailment probability against the best document (NLI backend)."""
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sentence": self.sentence, "verdict": "grounded" if self.grounded else
                               "ungrounded", "document": self.document, "label": self.label}
        if self.probability is not None:
            out["entailment_probability"] = round(self.probability, 6)
        if self.reason:
            out["reason"] = self.reason
        return out


_SPLITTER: Any = None
_SPLITTER_LOCK = threading.Lock()


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (nltk's Punkt with the English model touchstone ships), each
    stripped, empty ones dropped; a text without sentence punctuation is one sentence."""
    global _SPLITTER
    if not text.strip():
        return []
    with _SPLITTER_LOCK:
        if _SPLITTER is None:
            from nltk.tokenize.punkt import PunktSentenceTokenizer

            from touchstone.evaluators.text.tokenize import bundled_punkt_parameters

            _SPLITTER = PunktSentenceTokenizer(bundled_punkt_parameters())
    return [s.strip() for s in _SPLITTER.tokenize(text) if s.strip()]


def entailment_index(id2label: Mapping[Any, str]) -> int:
    """The class index whose label is entailment in a model's ``id2label``; a ConfigurationError
    naming the labels when there is none."""
    for index, name in id2label.items():
        if str(name).strip().lower() in ("entailment", "entailed", "entails", "entail"):
            return int(index)
    raise ConfigurationError(f"{FEATURE}: the model's labels {dict(id2label)} have no 'entailment' "
                             "(an NLI cross-encoder labels contradiction / entailment / neutral)")


class NliModel:
    """A cross-encoder NLI model, loaded on first use; predictions in batched forward passes."""

    def __init__(self, model: str | os.PathLike[str], *, device: str | None = None, batch_size: int = 32,
                 max_length: int | None = None) -> None:
        from touchstone.embeddings.deps import check_local
        from touchstone.embeddings.local import resolve_model

        check_local(FEATURE, "torch", "sentence_transformers")
        self.path, self.name = resolve_model(model, FEATURE)
        self.device = device
        self.batch_size = int(batch_size)
        self.max_length = max_length
        self._lazy_model: Any = None
        self._lazy_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_lazy")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lazy_model = None
        self._lazy_lock = threading.Lock()

    @property
    def model(self) -> Any:
        if self._lazy_model is None:
            from touchstone.embeddings.deps import import_local

            st = import_local(FEATURE, "sentence_transformers")
            self._lazy_model = st.CrossEncoder(self.path, device=self.device, local_files_only=True,
                                               max_length=self.max_length)
        return self._lazy_model

    @property
    def labels(self) -> dict[int, str]:
        """The model's class labels by index (``id2label``)."""
        return {int(k): str(v) for k, v in self.model.model.config.id2label.items()}

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Class probabilities (softmax) of each (premise, hypothesis) pair: shape (pairs, labels)."""
        from touchstone.embeddings.deps import guard_forked_torch

        if not pairs:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        guard_forked_torch()
        with self._lazy_lock:
            out = self.model.predict(list(pairs), batch_size=self.batch_size, apply_softmax=True,
                                     show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float32).reshape(len(pairs), -1)


def ungrounded_reason(verdicts: Sequence[SentenceVerdict]) -> str:
    """The SDK-style reason: grounded, or which sentences are not."""
    bad = [v.sentence for v in verdicts if not v.grounded]
    if not bad:
        return f"All {len(verdicts)} sentences of the response are grounded in the context."
    listed = " | ".join(bad)
    return f"{len(bad)} of {len(verdicts)} sentences are not grounded in the context: {listed}"


@register
class GroundednessProEvaluator(Evaluator):
    """Whether every sentence of the response is grounded in the context (the SDK's
    ``GroundednessProEvaluator`` keys), decided by a local NLI cross-encoder or by a judge.

    Args:
        credential, azure_ai_project: the SDK's arguments, accepted and unused (nothing is sent to a
            service).
        model: directory of an NLI cross-encoder (NLI backend).
        model_config: a judge configuration (judge backend).
        backend: ``"nli"`` or ``"judge"``; by default ``"nli"`` when ``model`` is given, else
            ``"judge"`` when ``model_config`` is.
        threshold: the SDK's option (default 5), recorded and unused: the label is the verdict.
        batch_size, max_length, device: of the NLI model's forward passes.
    """

    metric = "groundedness_pro"
    prefix = "groundedness_pro"
    score_key = "groundedness_pro_label"
    inputs = (
        InputSpec("query", "text", required=False, description="the user's question (not used)"),
        InputSpec("response", "text", description="the application's answer"),
        InputSpec("context", "context", description="the retrieved documents (text or a list)"),
    )
    description = "every response sentence entailed by the context (local NLI cross-encoder, or a judge)"
    value_range = "true/false"
    tier: ClassVar[Tier] = "free"  # a local NLI model (medium when a judge does it, below)
    aggregators: ClassVar[tuple[str, ...]] = ("mean", "pass_rate", "total")
    secondary = ("groundedness_pro_sentences", "groundedness_pro_ungrounded_sentences",
                 "groundedness_pro_no_sentences", "groundedness_pro_empty_context")
    min_batch_rows: ClassVar[int] = MODEL_BATCH_ROWS

    def __init__(
        self,
        credential: Any = None,
        azure_ai_project: Any = None,
        *,
        model: str | os.PathLike[str] | None = None,
        model_config: Any = None,
        backend: str | None = None,
        threshold: int = 5,
        batch_size: int = 32,
        max_length: int | None = None,
        device: str | None = None,
    ) -> None:
        super().__init__()
        chosen = backend or ("nli" if model is not None else "judge" if model_config is not None else None)
        if chosen is None:
            raise ConfigurationError(
                "GroundednessProEvaluator needs a local NLI cross-encoder (model=<directory>) or a judge "
                "(backend='judge', model_config=...); it never calls Azure's evaluation service")
        if chosen not in BACKENDS:
            raise ConfigurationError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.backend = chosen
        self.sdk_threshold = threshold
        self.nli: NliModel | None = None
        self.model_config: Any = None
        self._client: Any = None
        if chosen == "nli":
            if model is None:
                raise ConfigurationError("groundedness_pro with backend='nli' needs model=<directory of an "
                                         "NLI cross-encoder>")
            self.nli = NliModel(model, device=device, batch_size=batch_size, max_length=max_length)
        else:
            if model_config is None:
                from touchstone.evaluators.judge import no_judge_error

                raise no_judge_error(self.metric)
            from touchstone.evaluators.judge import check_model_config

            check_model_config(model_config)
            self.model_config = model_config
            self.is_async = True  # type: ignore[misc]
            self.needs_judge = True  # type: ignore[misc]
            self.tier = "medium"  # type: ignore[misc]

    @classmethod
    def from_options(cls, *, model_config: Any = None, **_: Any) -> GroundednessProEvaluator:
        """The registry's factory (command line): the judge backend (an NLI model is a directory, given
        in Python)."""
        return cls(model_config=model_config, backend="judge")

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"threshold": self.sdk_threshold, "backend": self.backend}
        if self.nli is not None:
            opts.update(model=self.nli.name, path=self.nli.path, batch_size=self.nli.batch_size,
                        max_length=self.nli.max_length)
        else:
            from touchstone.evaluators.judge import describe_judge
            from touchstone.evaluators.judge.prompts import load_prompt

            prompt = load_prompt("rag_claims_verify")
            opts.update(judge=describe_judge(self.model_config),
                        prompts={prompt.name: {"version": prompt.version, "hash": prompt.hash}})
        return opts

    # ------------------------------------------------------------------ outputs
    def labelled(self, verdicts: Sequence[SentenceVerdict], outcome: str,
                 properties: Mapping[str, Any] | None = None) -> Outcome:
        """The row's outcome: the SDK's keys, the properties, the main Score and the counts."""
        grounded = all(v.grounded for v in verdicts)
        if outcome == "no_sentences":
            reason = "The response states nothing: there is nothing ungrounded in it."
        elif outcome == "empty_context":
            reason = f"No context was retrieved: none of the {len(verdicts)} sentences can be grounded."
        else:
            reason = ungrounded_reason(verdicts)
        m = self.prefix
        props: dict[str, Any] = {**(properties or {}), "outcome": outcome, "backend": self.backend,
                                 "sentences": [v.as_dict() for v in verdicts]}
        out: dict[str, Any] = {f"{m}_label": grounded, f"{m}_reason": reason, f"{m}_properties": props}
        n_bad = sum(1 for v in verdicts if not v.grounded)
        main = Score(self.score_key, 1.0 if grounded else 0.0, label="grounded" if grounded else "ungrounded",
                     reason=reason, passed=grounded, properties=props)
        counts = [Score(f"{m}_sentences", float(len(verdicts))),
                  Score(f"{m}_ungrounded_sentences", float(n_bad)),
                  Score(f"{m}_no_sentences", float(outcome == "no_sentences")),
                  Score(f"{m}_empty_context", float(outcome == "empty_context"))]
        return Outcome([main, *counts], out)

    def _edge(self, sentences: list[str], docs: list[dict[str, Any]]) -> Outcome | None:
        if not sentences:
            return self.labelled([], "no_sentences")
        if not any(str(d.get("content", "")).strip() for d in docs):
            return self.labelled([SentenceVerdict(s, False) for s in sentences], "empty_context")
        return None

    # ------------------------------------------------------------------ NLI backend
    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        if self.nli is None:
            return list(_run_coroutine(self._ascore_rows(rows)))
        prepared: list[tuple[list[str], list[dict[str, Any]]] | Outcome | Exception] = []
        pairs: list[tuple[str, str]] = []
        for row in rows:
            try:
                sentences = split_sentences(row["response"])
                docs = [d for d in context_documents(row["context"]) if str(d.get("content", "")).strip()]
                edge = self._edge(sentences, docs)
                if edge is not None:
                    prepared.append(edge)
                    continue
                prepared.append((sentences, docs))
                pairs.extend((str(d["content"]), s) for s in sentences for d in docs)
            except Exception as exc:
                prepared.append(exc)
        try:
            probs = self.nli.probabilities(pairs)
            labels = self.nli.labels
            entail = entailment_index(labels)
        except RunAbortedError:
            raise
        except Exception as exc:  # the model could not run: every row of the batch that needed it failed
            return [p if isinstance(p, Outcome) else self.failure(exc) for p in prepared]
        out: list[Outcome] = []
        start = 0
        for item in prepared:
            if isinstance(item, (Outcome, Exception)):
                out.append(item if isinstance(item, Outcome) else self.failure(item))
                continue
            sentences, docs = item
            block = probs[start:start + len(sentences) * len(docs)].reshape(len(sentences), len(docs), -1)
            start += len(sentences) * len(docs)
            out.append(self.labelled(self._nli_verdicts(sentences, docs, block, labels, entail), "sentences",
                                     {"model": self.nli.name}))
        return out

    @staticmethod
    def _nli_verdicts(sentences: Sequence[str], docs: Sequence[Mapping[str, Any]], block: np.ndarray,
                      labels: Mapping[int, str], entail: int) -> list[SentenceVerdict]:
        """Per sentence: grounded when the top label against some document is entailment; the
        document is the one with the highest entailment probability."""
        verdicts = []
        for i, sentence in enumerate(sentences):
            top = block[i].argmax(axis=1)  # per document
            best = int(block[i][:, entail].argmax())
            grounded = bool((top == entail).any())
            if grounded:
                best = int(np.flatnonzero(top == entail)[block[i][top == entail, entail].argmax()])
            verdicts.append(SentenceVerdict(
                sentence, grounded, str(docs[best].get("id")) if grounded else None,
                labels.get(int(top[best]), str(int(top[best]))), float(block[i][best, entail])))
        return verdicts

    def _score(self, **inputs: Any) -> Outcome:
        return self.score_batch([inputs])[0]

    # ------------------------------------------------------------------ judge backend
    def client(self) -> Any:
        if self._client is None:
            from touchstone.judges.client import get_judge_client

            self._client = get_judge_client(self.model_config)
        return self._client

    async def _ascore(self, **inputs: Any) -> Outcome:
        if self.nli is not None:
            return self._score(**inputs)
        from touchstone.evaluators.rag.claims import verify_claims

        sentences = split_sentences(inputs["response"])
        docs = [d for d in context_documents(inputs["context"]) if str(d.get("content", "")).strip()]
        edge = self._edge(sentences, docs)
        if edge is not None:
            return edge
        report = await verify_claims(self.client(), sentences, docs)
        verdicts = [SentenceVerdict(v.claim, v.supported, v.document,
                                    "supported" if v.supported else "unsupported", reason=v.reason)
                    for v in report.verdicts]
        return self.labelled(verdicts, "sentences", report.properties)

    async def _ascore_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        import asyncio

        return list(await asyncio.gather(*(self.ascore(row) for row in rows)))

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outcome:
        out = super().failure(error, kind=kind)
        out[f"{self.prefix}_threshold"] = self.sdk_threshold
        return out


__all__ = ["GroundednessProEvaluator", "NliModel", "SentenceVerdict", "entailment_index", "split_sentences"]
