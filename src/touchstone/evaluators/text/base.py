"""What the reference-overlap metrics share: inputs ``response`` + ``ground_truth`` (one or several), a
0-1 score passing at 0.5, batch scoring without per-row dispatch, sacrebleu's segment statistics kept
per row so a corpus score is recomputed from stored scores, and the word-tokenized family's options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from touchstone.data.kinds import as_text_list
from touchstone.evaluators.base import RESPONSE_AND_GROUND_TRUTHS, Evaluator
from touchstone.evaluators.text.tokenize import WordTokenizer
from touchstone.scores import Outcome


class OverlapEvaluator(Evaluator):
    """Shared shape: inputs ``response`` + ``ground_truth`` (one or several), a 0-1 score, pass at 0.5."""

    inputs = RESPONSE_AND_GROUND_TRUTHS
    value_range = "0-1"
    default_threshold: ClassVar[float | None] = 0.5

    def value(self, response: str, truths: list[str]) -> float:
        """The metric for one response against its ground truths."""
        raise NotImplementedError

    def outputs(self, response: str, truths: list[str]) -> Outcome:
        """The full output dict for one response against its ground truths."""
        return self.result(self.value(response, truths))

    def _score(self, **inputs: Any) -> Outcome:
        return self.outputs(inputs["response"], as_text_list(inputs["ground_truth"]))

    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        out: list[Outcome] = []
        outputs = self.outputs
        for row in rows:
            try:
                gt = row["ground_truth"]
                out.append(outputs(row["response"], [gt] if isinstance(gt, str) else list(gt)))
            except Exception as exc:  # a failed score is data, recorded with its cause
                out.append(self.failure(exc))
        return out

    def __getstate__(self) -> dict[str, Any]:
        # Library objects and caches are rebuilt lazily after unpickling (process pools).
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_lazy")}


# --------------------------------------------------------------------------------- sacrebleu family
class SacrebleuEvaluator(OverlapEvaluator):
    """A sacrebleu metric. Each row's sufficient statistics (sacrebleu's segment statistics) give the
    sentence score and are kept in ``<m>_properties["sacrebleu_stats"]``, so the corpus score -- the
    statistics summed over rows -- is recomputed from stored scores without a second pass over the
    texts (``corpus_metrics``)."""

    corpus_key: ClassVar[str] = ""

    def _make_metric(self) -> Any:
        raise NotImplementedError

    @property
    def _metric(self) -> Any:
        metric = self.__dict__.get("_lazy_metric")
        if metric is None:
            metric = self.__dict__["_lazy_metric"] = self._make_metric()
        return metric

    def statistics(self, response: str, truths: list[str]) -> list[int]:
        """sacrebleu's sufficient statistics of one segment (against all its references)."""
        stats = self._metric._extract_corpus_statistics([response], [[t] for t in truths])[0]
        return [int(x) for x in stats]

    def sentence_value(self, stats: list[int]) -> float:
        # clamped: sacrebleu can return 100.00000000000004 for a perfect match
        return min(1.0, float(self._metric._compute_score_from_stats(list(stats)).score) / 100.0)

    def value(self, response: str, truths: list[str]) -> float:
        return self.sentence_value(self.statistics(response, truths))

    def outputs(self, response: str, truths: list[str]) -> Outcome:
        stats = self.statistics(response, truths)
        return self.result(self.sentence_value(stats), properties={"sacrebleu_stats": stats})

    def corpus_value(self, stats: list[list[int]]) -> float:
        raise NotImplementedError

    def corpus_metrics(
        self, inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Outcome]
    ) -> dict[str, float]:
        # The statistics are summed as the rows go by (integers: the same sum as summing them at the
        # end), so a run's rows can be streamed through here without being held.
        total: list[int] | None = None
        for row, out in zip(inputs, outputs, strict=True):
            if self.error_key in out:
                continue
            props = out.get(f"{self.prefix}_properties")
            stats = props.get("sacrebleu_stats") if isinstance(props, Mapping) else None
            if stats is None:  # stored by another version, or built by hand: recompute
                stats = self.statistics(row["response"], as_text_list(row["ground_truth"]))
            total = list(stats) if total is None else [a + b for a, b in zip(total, stats, strict=True)]
        if total is None:
            return {}
        return {self.corpus_key: self.corpus_value([total])}


def sum_stats(stats: list[list[int]]) -> list[int]:
    return [sum(column) for column in zip(*stats, strict=True)]


class WordEvaluator(OverlapEvaluator):
    def __init__(self, *, threshold: float = 0.5, tokenizer: str = "sdk") -> None:
        super().__init__(threshold=threshold)
        self.tokenizer = WordTokenizer(tokenizer)

    def options(self) -> dict[str, Any]:
        import nltk

        return {
            **super().options(),
            "tokenizer": self.tokenizer.name,
            **self.tokenizer.describe(),
            "nltk": nltk.__version__,
        }
