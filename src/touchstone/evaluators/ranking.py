"""Retrieval ranking metrics (SPEC 3.4).

Two evaluators, both on the inputs ``retrieved_documents`` (ids best first, or objects with a
``relevance_score``, sorted by it descending, ties keeping their original order) and
``retrieval_ground_truth`` (relevant ids, or objects with an integer ``query_relevance_label``):

* :class:`RankingEvaluator` (``ranking``): ``precision_at_k``, ``recall_at_k``, ``hit_rate_at_k``,
  ``ndcg_at_k`` for each requested ``k``, plus ``mrr`` and ``map`` over the whole list. Computed for a
  whole batch at once with numpy; values equal pytrec_eval's (``P_k``, ``recall_k``, ``ndcg_cut_k``
  with linear gain, ``recip_rank``, ``map``) and ranx's (``ndcg`` linear, ``ndcg_burges`` exponential).
* :class:`DocumentRetrievalEvaluator` (``document_retrieval``): the compatible SDK's family --
  ``ndcg@3``, ``xdcg@3``, ``fidelity``, ``top1_relevance``, ``top3_max_relevance``, ``holes``,
  ``holes_ratio`` -- with its thresholds.

Conventions of :class:`RankingEvaluator` (all defined, none NaN):

* A document is relevant when its label is at least ``relevance_threshold`` (default 1, must be > 0);
  a retrieved document without a label is not relevant (label 0). With graded labels, the gain of
  a relevant document is ``2**label - 1`` (``gain="exponential"``, default) or ``label``
  (``gain="linear"``, trec_eval's); documents under the threshold have gain 0, as ranx's relevance
  level. The discount is ``log2(rank + 1)``; the ideal ordering sorts all labelled documents.
* A document retrieved twice counts once, at its first rank.
* ``precision_at_k`` divides by ``k`` even when fewer than ``k`` documents were retrieved (trec_eval,
  ranx); ``k`` larger than the list is allowed.
* No relevant document in the labels: every metric is 0. An empty retrieved list: every metric is 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import count, repeat
from typing import Any, ClassVar

import numpy as np

from touchstone._gc import collector_paused
from touchstone.data.kinds import ranked_ids, relevance_labels
from touchstone.evaluators.base import Evaluator, InputSpec
from touchstone.evaluators.registry import register
from touchstone.scores import CompactOutcome, Outcome, Score

_RANKING_INPUTS = (
    InputSpec(
        "retrieval_ground_truth",
        "relevance_labels",
        description="relevant document ids, or {document_id, query_relevance_label} objects",
    ),
    InputSpec(
        "retrieved_documents",
        "ranked_documents",
        description="retrieved document ids best first, or {document_id, relevance_score} objects",
    ),
)

GAINS = ("exponential", "linear")
_STR = {str}
_DICT = {dict}
_INT = {int}


def dedupe(ids: Sequence[str]) -> list[str]:
    """Ids in order, each kept at its first occurrence."""
    return list(dict.fromkeys(ids))


@register
class RankingEvaluator(Evaluator):
    """precision@k, recall@k, hit rate@k, nDCG@k (several k at once), MRR and MAP of a ranked list.

    Options: ``k`` (an int or a list of ints, default ``(1, 3, 5, 10)``), ``gain``
    (``"exponential"`` -- ``2**label - 1``, the default -- or ``"linear"``), ``relevance_threshold``
    (the smallest label that counts as relevant, default 1). ``threshold`` (optional) gives
    pass/fail on the first ``ndcg_at_k``."""

    metric = "ranking"
    prefix = "ranking"
    score_key = "ndcg_at_10"
    inputs = _RANKING_INPUTS
    description = "precision@k, recall@k, hit rate@k, nDCG@k, MRR, MAP of the retrieved ranking"
    value_range = "0-1"
    default_threshold: ClassVar[float | None] = None

    def __init__(
        self,
        *,
        k: int | Sequence[int] = (1, 3, 5, 10),
        gain: str = "exponential",
        relevance_threshold: float = 1,
        threshold: float | None = None,
    ) -> None:
        super().__init__(threshold=threshold)
        ks = [k] if isinstance(k, int) else list(k)
        if not ks or any(not isinstance(x, int) or isinstance(x, bool) or x < 1 for x in ks):
            raise ValueError(f"k must be a positive integer or a list of them, got {k!r}")
        if gain not in GAINS:
            raise ValueError(f"gain must be one of {', '.join(GAINS)}, got {gain!r}")
        if not relevance_threshold > 0:
            raise ValueError(f"relevance_threshold must be > 0, got {relevance_threshold!r}")
        self.ks = sorted(dict.fromkeys(ks))
        self.gain = gain
        self.relevance_threshold = float(relevance_threshold)
        self.score_key = f"ndcg_at_{ks[0]}"  # type: ignore[misc]

    def options(self) -> dict[str, Any]:
        return {
            **super().options(),
            "k": list(self.ks),
            "gain": self.gain,
            "relevance_threshold": self.relevance_threshold,
        }

    def output_keys(self) -> list[str]:
        keys = []
        for k in self.ks:
            keys += [f"precision_at_{k}", f"recall_at_{k}", f"hit_rate_at_{k}", f"ndcg_at_{k}"]
        return [*keys, "mrr", "map"]

    # ------------------------------------------------------------------ scoring
    def _score(self, **inputs: Any) -> Outcome:
        return self.score_batch([inputs])[0]

    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        with collector_paused():  # one result per query, no cycles: see touchstone._gc
            return self._score_batch(rows)

    def _score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        # Sparse preparation: per row, the rank of each retrieved id (one C-level dict build) and,
        # for each labelled id, its rank (-1 when not retrieved) and label -- about a dozen values per
        # row instead of one per retrieved document. numpy scatters them into the n x W label matrix.
        n_lists: list[int] = []  # deduplicated length of each good row's retrieved list
        t_lens: list[int] = []  # number of labelled ids of each good row
        t_pos: list[int] = []  # flat: rank of each labelled id in its row's ranking, -1 if absent
        t_lab: list[int] = []  # flat: its label
        errors: dict[int, BaseException] = {}
        prepare = self._prepare
        for i, row in enumerate(rows):
            try:
                labels, pos = prepare(row)
            except Exception as exc:  # a failed score is data, recorded with its cause
                errors[i] = exc
                continue
            n_lists.append(len(pos))
            t_lens.append(len(labels))
            t_pos.extend(map(pos.get, labels, repeat(-1)))
            t_lab.extend(labels.values())
        n = len(n_lists)
        columns = self._compute_sparse(n_lists, t_lens, t_pos, t_lab) if n else {}
        keys = list(columns)
        # Python floats, as float(np.float64) gives
        values_rows = zip(
            *(np.asarray(col, dtype=np.float64).tolist() for col in columns.values()), strict=True
        )
        if self.threshold is None:  # no Score objects (nor lines) until someone asks for them
            good: list[Outcome] = list(CompactOutcome.of_value_rows(keys, values_rows, self.score_key))
        else:
            good = [self._outputs(dict(zip(keys, v, strict=True))) for v in values_rows]
        if not errors:
            return good
        out: list[Outcome] = []
        it = iter(good)
        for i in range(len(rows)):
            out.append(self.failure(errors[i]) if i in errors else next(it))
        return out

    def _outputs(self, values: dict[str, float]) -> Outcome:
        main = values[self.score_key]
        if self.threshold is None:  # no Score objects (nor lines) until someone asks for them
            return CompactOutcome.of_values(values, self.score_key)
        scores = [Score(name, value) for name, value in values.items() if name != self.score_key]
        outcome = self.result(main)
        rendered = {**values, **{k: v for k, v in outcome.items() if k != self.score_key}}
        return Outcome([*outcome.scores, *scores], rendered)

    @staticmethod
    def _prepare(row: Mapping[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
        """(all labels of the ground truth as ``{id: label}``, the 0-based rank of each retrieved id
        after deduplication as ``{id: rank}``)."""
        truth = row["retrieval_ground_truth"]
        retrieved = row["retrieved_documents"]
        # fast paths for the common shapes (str ids, int labels in plain dicts), checked with C-level
        # set(map(type, ...)) instead of per-item isinstance chains; anything else takes the general
        # conversion (relevance_labels / ranked_ids), which also raises the errors
        labels: dict[str, int] | None = None
        tt = set(map(type, truth))
        if tt == _STR:
            labels = dict.fromkeys(truth, 1)
        elif tt == _DICT:
            try:
                labels = {g["document_id"]: g["query_relevance_label"] for g in truth}
            except Exception:  # the general conversion below decides (and raises its own error)
                labels = None
            else:
                if not (set(map(type, labels)) <= _STR and set(map(type, labels.values())) <= _INT):
                    labels = None
        if labels is None:
            labels = relevance_labels(truth)
        if type(retrieved) is list and set(map(type, retrieved)) == _STR:
            pos = dict(zip(retrieved, count()))
            if len(pos) != len(retrieved):  # duplicates: each id at its first rank
                pos = dict(zip(dict.fromkeys(retrieved), count()))
        else:
            pos = dict(zip(dedupe(ranked_ids(retrieved)), count()))
        return labels, pos

    def _compute_sparse(
        self, n_lists: Sequence[int], t_lens: Sequence[int], t_pos: Sequence[int], t_lab: Sequence[int]
    ) -> dict[str, np.ndarray]:
        n = len(n_lists)
        lengths = np.fromiter(n_lists, dtype=np.int64, count=n)
        width = int(lengths.max()) if n else 0
        tl = np.fromiter(t_lens, dtype=np.int64, count=n)
        total = int(tl.sum())
        tpos = np.fromiter(t_pos, dtype=np.int64, count=total)
        tlab = np.fromiter(t_lab, dtype=np.int64, count=total)
        trow = np.repeat(np.arange(n), tl)
        ret = np.zeros((n, width), dtype=np.int64)  # unretrieved positions and unlabelled ids: 0
        found = tpos >= 0
        ret[trow[found], tpos[found]] = tlab[found]
        tmax = int(tl.max()) if n else 0
        truth = np.zeros((n, tmax), dtype=np.int64)
        truth[trow, np.arange(total) - np.repeat(np.cumsum(tl) - tl, tl)] = tlab
        return self._compute_matrix(ret, truth)

    def compute(
        self, retrieved: Sequence[Sequence[int]], truth: Sequence[Sequence[int]]
    ) -> dict[str, np.ndarray]:
        """All metrics for many queries at once: ``retrieved[q]`` holds the labels of query ``q``'s
        retrieved documents in rank order (0 when unlabelled), ``truth[q]`` all its labels."""
        return self._compute_matrix(_padded(retrieved), _padded(truth))

    def _compute_matrix(self, ret: np.ndarray, truth: np.ndarray) -> dict[str, np.ndarray]:
        """The metrics from ``ret`` (n x W labels of the retrieved documents in rank order, 0 padded)
        and ``truth`` (n x T labels of the ground truth, 0 padded; pads are never relevant: t > 0)."""
        n = ret.shape[0]
        t = self.relevance_threshold
        kmax = max(self.ks)
        width = ret.shape[1]
        rel = ret >= t
        hits = np.cumsum(rel, axis=1, dtype=np.int64)
        truth_rel = truth >= t
        n_rel = truth_rel.sum(axis=1, dtype=np.int64)
        safe_n_rel = np.maximum(n_rel, 1)

        gains = self._gain(np.where(rel, ret, 0))
        # ideal ordering: the labels sorted descending; only labels >= t have a gain, so sorting the
        # relevant ones (others as 0) gives the same ideal gains as sorting all labels
        ideal = -np.sort(-np.where(truth_rel, truth, 0), axis=1)[:, :kmax]
        if ideal.shape[1] < kmax:
            ideal = np.pad(ideal, ((0, 0), (0, kmax - ideal.shape[1])))
        ideal_gains = self._gain(ideal)
        discount = 1.0 / np.log2(np.arange(2, max(width, kmax) + 2, dtype=np.float64))
        dcg = np.cumsum(gains * discount[:width], axis=1) if width else np.zeros((n, 0))
        idcg = np.cumsum(ideal_gains * discount[:kmax], axis=1)

        out: dict[str, np.ndarray] = {}
        for k in self.ks:
            hk = hits[:, min(k, width) - 1] if width else np.zeros(n, dtype=np.int64)
            out[f"precision_at_{k}"] = hk / k
            out[f"recall_at_{k}"] = np.where(n_rel > 0, hk / safe_n_rel, 0.0)
            out[f"hit_rate_at_{k}"] = (hk > 0).astype(np.float64)
            dk = dcg[:, min(k, width) - 1] if width else np.zeros(n)
            ik = idcg[:, k - 1]
            out[f"ndcg_at_{k}"] = np.where(ik > 0, dk / np.where(ik > 0, ik, 1.0), 0.0)
        if width:
            any_rel = rel.any(axis=1)
            first = np.argmax(rel, axis=1)
            out["mrr"] = np.where(any_rel, 1.0 / (first + 1), 0.0)
            precision_at_rank = hits / np.arange(1, width + 1)
            out["map"] = np.where(n_rel > 0, (precision_at_rank * rel).sum(axis=1) / safe_n_rel, 0.0)
        else:
            out["mrr"] = np.zeros(n)
            out["map"] = np.zeros(n)
        return {key: out[key] for key in self.output_keys()}

    def _gain(self, labels: np.ndarray) -> np.ndarray:
        labels = labels.astype(np.float64)
        if self.gain == "linear":
            return labels
        gains: np.ndarray = np.exp2(labels) - 1.0
        return gains


def _padded(lists: Sequence[Sequence[int]], min_width: int = 0) -> np.ndarray:
    """Ragged lists of ints as an n x width int64 matrix padded with 0, built without a per-row numpy
    call (one flat array and one scatter)."""
    n = len(lists)
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=n)
    width = max(int(lengths.max()) if n else 0, min_width)
    out = np.zeros((n, width), dtype=np.int64)
    total = int(lengths.sum())
    if total:
        flat = np.fromiter((v for x in lists for v in x), dtype=np.int64, count=total)
        row = np.repeat(np.arange(n), lengths)
        starts = np.cumsum(lengths) - lengths
        col = np.arange(total) - np.repeat(starts, lengths)
        out[row, col] = flat
    return out


# ------------------------------------------------------------------------------- document retrieval
_HIGHER = ("ndcg@3", "xdcg@3", "fidelity", "top1_relevance", "top3_max_relevance")
_COUNTS = ("total_retrieved_documents", "total_ground_truth_documents")
_LOWER = ("holes", "holes_ratio")


@register
class DocumentRetrievalEvaluator(Evaluator):
    """The compatible SDK's document-retrieval metrics, with its thresholds and output keys.

    For graded labels in ``[ground_truth_label_min, ground_truth_label_max]`` and the retrieved
    documents sorted by ``relevance_score`` (descending, stable):

    * ``ndcg@3``: sum of ``(2**label - 1) / log2(rank + 1)`` over the top 3, over the same for the top
      3 of all ground-truth labels sorted descending (0 when that ideal is 0);
    * ``xdcg@3``: ``25 * label * 0.6**(rank - 1)`` summed over the top 3, over ``sum 0.6**(rank - 1)``
      for ranks 1-3 (scale 0-100 for labels 0-4);
    * ``fidelity``: over all retrieved documents, the sum of weights ``2**(label + 1) - 1`` of labels
      above ``ground_truth_label_min``, over the same sum for all ground-truth labels (0 when that is
      0; the SDK gives NaN there, and orders labels 10 and above as strings -- here they are numbers);
    * ``top1_relevance``: label of the first document; ``top3_max_relevance``: best label in the top 3;
    * ``holes``: retrieved documents without a label; ``holes_ratio``: holes / retrieved documents;
    * ``total_retrieved_documents``, ``total_ground_truth_documents``: list lengths.

    Unlabelled documents count as label 0. When no retrieved document has a non-zero label, the five
    relevance metrics are 0 (as the SDK). The main score ``document_retrieval`` is ``ndcg@3``.
    Each metric has ``_result``, ``_passed``, ``_threshold`` and ``_higher_is_better`` keys, flat and
    in ``document_retrieval_properties`` (the current SDK's shape)."""

    metric = "document_retrieval"
    prefix = "document_retrieval"
    score_key = "document_retrieval"
    secondary = (*_HIGHER, *_LOWER, "total_retrieved_documents", "total_ground_truth_documents")
    lower_is_better = frozenset(_LOWER)
    inputs = _RANKING_INPUTS
    description = "ndcg@3, xdcg@3, fidelity, top-k relevance and holes of the retrieved documents"
    value_range = "0-1 (ndcg, fidelity), 0-100 (xdcg), labels, counts"
    default_threshold: ClassVar[float | None] = 0.5
    k: ClassVar[int] = 3
    xdcg_discount_factor: ClassVar[float] = 0.6

    def __init__(
        self,
        *,
        ground_truth_label_min: int = 0,
        ground_truth_label_max: int = 4,
        ndcg_threshold: float | None = 0.5,
        xdcg_threshold: float | None = 50.0,
        fidelity_threshold: float | None = 0.5,
        top1_relevance_threshold: float | None = 50.0,
        top3_max_relevance_threshold: float | None = 50.0,
        total_retrieved_documents_threshold: int | None = 50,
        total_ground_truth_documents_threshold: int | None = 50,
        threshold: float | None = None,
    ) -> None:
        ndcg = threshold if threshold is not None else ndcg_threshold
        super().__init__(threshold=0.5 if ndcg is None else ndcg)
        for name, value in (
            ("ground_truth_label_min", ground_truth_label_min),
            ("ground_truth_label_max", ground_truth_label_max),
        ):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if ground_truth_label_min >= ground_truth_label_max:
            raise ValueError("ground_truth_label_max must be greater than ground_truth_label_min")
        self.ground_truth_label_min = ground_truth_label_min
        self.ground_truth_label_max = ground_truth_label_max
        self.thresholds: dict[str, float | None] = {
            "ndcg@3": ndcg,
            "xdcg@3": xdcg_threshold,
            "fidelity": fidelity_threshold,
            "top1_relevance": top1_relevance_threshold,
            "top3_max_relevance": top3_max_relevance_threshold,
            "total_retrieved_documents": total_retrieved_documents_threshold,
            "total_ground_truth_documents": total_ground_truth_documents_threshold,
            "holes": 0,
            "holes_ratio": 0,
        }

    def options(self) -> dict[str, Any]:
        return {
            **super().options(),
            "ground_truth_label_min": self.ground_truth_label_min,
            "ground_truth_label_max": self.ground_truth_label_max,
            "thresholds": dict(self.thresholds),
        }

    # ------------------------------------------------------------------ definitions
    def _labels(self, value: list[Any]) -> dict[str, int]:
        labels = relevance_labels(value)
        self._check_range(labels)
        return labels

    @staticmethod
    def _ranking(value: list[Any]) -> list[str]:
        """Retrieved ids best first, each once. Objects: one entry per id (its last score, at its
        first position, as a dict keeps them), sorted by score descending, ties in list order."""
        if value and all(isinstance(v, Mapping) and v.get("relevance_score") is not None for v in value):
            scores: dict[str, float] = {}
            for v in value:
                scores[str(v["document_id"])] = float(v["relevance_score"])
            return [d for d, _ in sorted(scores.items(), key=lambda item: -item[1])]
        return dedupe(ranked_ids(value))

    def _dcg(self, labels: Sequence[int]) -> float:
        top = enumerate(labels[: self.k])
        return sum((math.pow(2, label) - 1) / math.log2(rank + 2) for rank, label in top)

    def _fidelity_weight(self, labels: Sequence[int]) -> float:
        # The SDK counts labels per value keyed by the value's *string* and pairs the counts, in string
        # order, with weights in numeric order: for ranges reaching 10 the pairing is not by value.
        # Kept as it is, so that the values are the SDK's.
        lowest = self.ground_truth_label_min + 1
        counts = {str(i): 0 for i in range(lowest, self.ground_truth_label_max + 1)}
        for label in labels:
            if label >= lowest:
                counts[str(label)] += 1
        ordered = [n for _, n in sorted(counts.items())]
        weights = [math.pow(2, i + 1) - 1 for i in range(lowest, self.ground_truth_label_max + 1)]
        return sum(n * w for n, w in zip(ordered, weights, strict=False))

    def _sdk_inputs(self, truth: list[Any], retrieved: list[Any]) -> tuple[dict[Any, int], list[Any], int]:
        """Labels by document (the last label of a document given twice), retrieved ids best first (one
        entry per id: its last score, at its first position, sorted by score descending, ties in list
        order) and the number of retrieved items (duplicates included), as the SDK reads them."""
        if truth and all(isinstance(v, Mapping) and "query_relevance_label" in v for v in truth):
            labels: dict[Any, int] = {}
            for v in truth:
                label = v["query_relevance_label"]
                if not isinstance(label, int) or isinstance(label, bool):
                    raise ValueError(f"query_relevance_label must be an integer, got {label!r}")
                labels[v["document_id"]] = label
            self._check_range(labels)
        else:
            labels = dict(self._labels(truth))
        scored = (isinstance(v, Mapping) and v.get("relevance_score") is not None for v in retrieved)
        if retrieved and all(scored):
            scores: dict[Any, float] = {}
            for v in retrieved:
                scores[v["document_id"]] = v["relevance_score"]
            ranking = [d for d, _ in sorted(scores.items(), key=lambda item: item[1], reverse=True)]
        else:
            ranking = list(self._ranking(retrieved))
        return labels, ranking, len(retrieved)

    def _check_range(self, labels: Mapping[Any, int]) -> None:
        for doc_id, label in labels.items():
            if not self.ground_truth_label_min <= label <= self.ground_truth_label_max:
                raise ValueError(
                    f"document {doc_id!r} has query_relevance_label {label}, outside "
                    f"[{self.ground_truth_label_min}, {self.ground_truth_label_max}] "
                    "(set ground_truth_label_min / ground_truth_label_max)"
                )

    def metrics(self, retrieval_ground_truth: list[Any], retrieved_documents: list[Any]) -> dict[str, float]:
        """The metric values of one query (no pass/fail keys), with the SDK's values and types: floats
        for the relevance metrics, ``int`` 0 for all five when no retrieved document has a non-zero
        label, labels as given for ``top1_relevance`` / ``top3_max_relevance``, NaN ``fidelity`` when
        no ground-truth label is above ``ground_truth_label_min``."""
        if not retrieval_ground_truth:
            raise ValueError("retrieval_ground_truth must contain at least one item")
        labels, ranking, n_retrieved = self._sdk_inputs(retrieval_ground_truth, retrieved_documents)
        totals = {
            "total_retrieved_documents": n_retrieved,
            "total_ground_truth_documents": len(retrieval_ground_truth),
        }
        if not ranking:
            return {**{name: 0.0 for name in _HIGHER}, "holes": 0, "holes_ratio": 0, **totals}
        got = [labels.get(d, 0) for d in ranking]
        holes = len(set(ranking) - set(labels))
        out: dict[str, Any] = {}
        if not any(got):
            out = {name: 0 for name in _HIGHER}
        else:
            ideal = sorted(labels.values(), reverse=True)
            f = self.xdcg_discount_factor
            ideal_weight = self._fidelity_weight(ideal)
            out["ndcg@3"] = self._dcg(got) / float(self._dcg(ideal))
            discounts = [math.pow(f, rank) for rank in range(self.k)]
            gains = sum(25 * label * d for label, d in zip(got[: self.k], discounts, strict=False))
            out["xdcg@3"] = gains / float(sum(discounts))
            out["fidelity"] = self._fidelity_weight(got) / float(ideal_weight) if ideal_weight else math.nan
            out["top1_relevance"] = got[0]
            out["top3_max_relevance"] = max(got[: self.k])
        return {**out, "holes": holes, "holes_ratio": holes / float(n_retrieved), **totals}

    def _score(self, **inputs: Any) -> Outcome:
        values = self.metrics(inputs["retrieval_ground_truth"], inputs["retrieved_documents"])
        flat: dict[str, Any] = dict(values)
        for name, value in values.items():
            limit = self.thresholds[name]
            if limit is None:  # the SDK fails comparing with None; here the metric has no verdict
                continue
            higher = name not in _LOWER
            passed = value >= limit if higher else value <= limit
            flat[f"{name}_result"] = "pass" if passed else "fail"
            flat[f"{name}_passed"] = passed
            flat[f"{name}_threshold"] = limit
            flat[f"{name}_higher_is_better"] = higher
        return self.result(float(values["ndcg@3"]), properties=dict(flat), **flat)
