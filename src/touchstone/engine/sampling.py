"""Sampling a test set: ``--sample N`` rows or as many as ``--budget`` allows, chosen by a strategy.

Every strategy first puts all rows in an order of preference, and the sample is a walk down that
order: ``--sample N`` takes the first N; ``--budget`` takes each row whose estimated cost still fits
in what is left (a row that does not fit is skipped, later cheaper ones may still fit), so the total
never exceeds the budget and no row left out would fit. The orders:

- ``random``: a seeded shuffle.
- ``diverse``: strata (the values of ``--stratify-by COLUMN``, or k-means clusters of the query
  embeddings from the local embedding model) interleaved so that the first rows cover every stratum
  and every prefix follows the allocation: ``proportional`` to the strata's sizes, or ``equal``.
- ``difficult``: rows that failed, scored below their threshold, or on which judges disagreed, in
  earlier stored runs on the same dataset (matched by row id), first; then the rest, shuffled.
- ``uncertain``: rows by an active-learning signal, most uncertain first: an ``uncertainty`` column,
  or a stored score whose metric name contains ``uncertainty``; without one, a clear error.

A row's id is its ``id`` column when every row has a distinct one, else its position in the data.
The chosen ids, the strategy and its settings are stored with the run (:meth:`Sample.config`).
"""

from __future__ import annotations

import hashlib
import math
import os
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from touchstone.errors import InputValidationError, Problem

STRATEGIES = ("random", "diverse", "difficult", "uncertain")
ALLOCATIONS = ("proportional", "equal")
UNCERTAINTY_COLUMNS = ("uncertainty", "al_uncertainty", "_uncertainty")
"""Data columns read as an active-learning signal (higher: more uncertain)."""
QUERY_COLUMNS = ("query", "question", "input", "prompt")
"""Columns whose text is embedded for the ``diverse`` strategy's clusters, the first present."""

Embed = Callable[[Sequence[str]], Any]


@dataclass(frozen=True)
class SampleRequest:
    """What the user asked for: a row count and/or a budget (in the pricing table's currency), a
    strategy and its settings."""

    n: int | None = None
    budget: float | None = None
    strategy: str = "random"
    seed: int = 0
    stratify_by: str | None = None
    allocation: str = "proportional"
    clusters: int | None = None

    def check(self) -> None:
        """Raise InputValidationError naming the first bad setting."""
        problems = []
        if self.n is None and self.budget is None and self.strategy != "random":
            problems.append(("--strategy", "needs --sample N or --budget AMOUNT"))
        if self.n is not None and self.n < 1:
            problems.append(("--sample", f"must be a positive number of rows, got {self.n}"))
        if self.budget is not None and not (math.isfinite(self.budget) and self.budget > 0):
            problems.append(("--budget", f"must be a positive amount, got {self.budget}"))
        if self.strategy not in STRATEGIES:
            problems.append(("--strategy", f"unknown strategy {self.strategy!r}; expected one of "
                             f"{', '.join(STRATEGIES)}"))
        if self.allocation not in ALLOCATIONS:
            expected = ", ".join(ALLOCATIONS)
            problems.append(("--allocation", f"expected one of {expected}, got {self.allocation!r}"))
        if self.clusters is not None and self.clusters < 1:
            problems.append(("--clusters", f"must be at least 1, got {self.clusters}"))
        if problems:
            raise InputValidationError([Problem(opt, None, None, text) for opt, text in problems])


@dataclass
class Sample:
    """The rows chosen: ``indices`` are positions in the data (ascending), ``row_ids`` their ids;
    ``strata`` counts the chosen rows per stratum or cluster (``diverse``); ``estimated_cost`` is
    the sum of the chosen rows' estimated costs when they were known; ``messages`` say what happened."""

    request: SampleRequest
    indices: list[int]
    row_ids: list[Any]
    total_rows: int
    strata: dict[str, int] = field(default_factory=dict)
    estimated_cost: float | None = None
    messages: list[str] = field(default_factory=list)
    data: str | None = None
    data_sha256: str | None = None

    def config(self) -> dict[str, Any]:
        """What the run stores about its sample (in its configuration, as ``options.sampling``)."""
        r = self.request
        return {
            "strategy": r.strategy, "seed": r.seed, "n": r.n, "budget": r.budget,
            "stratify_by": r.stratify_by, "allocation": r.allocation, "clusters": r.clusters,
            "total_rows": self.total_rows, "data": self.data, "data_sha256": self.data_sha256,
            "row_ids": list(self.row_ids), "indices": list(self.indices), "strata": dict(self.strata),
            "estimated_cost": self.estimated_cost,
        }


# --------------------------------------------------------------------------- row ids and datasets
def row_ids(rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Each row's id: its ``id`` column when every row has a distinct scalar one, else its position."""
    ids = [row.get("id") for row in rows]
    scalar = all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids)
    if ids and scalar and len(set(ids)) == len(ids):
        return ids
    return list(range(len(rows)))


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a data file's bytes (how stored runs on the same dataset are found)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------- orders
def order_random(n: int, seed: int) -> list[int]:
    """Positions 0..n-1 in a seeded random order."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def _quota_shares(sizes: Sequence[int], allocation: str) -> list[float]:
    total = sum(sizes)
    if allocation == "equal":
        return [1.0 / len(sizes)] * len(sizes)
    return [s / total for s in sizes]


def order_diverse(labels: Sequence[Hashable], seed: int, allocation: str = "proportional") -> list[int]:
    """Positions interleaved across the strata given by ``labels``: the first k positions cover the k
    strata (largest first); after that, each next position comes from the stratum furthest below its
    share (``proportional``: its size over the total; ``equal``: 1/k) among those not yet exhausted.
    Within a stratum the order is a seeded shuffle."""
    rng = random.Random(seed)
    groups: dict[Hashable, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(label, []).append(i)
    keys = sorted(groups, key=lambda k: (-len(groups[k]), str(k)))
    members = [groups[k] for k in keys]
    for m in members:
        rng.shuffle(m)
    shares = _quota_shares([len(m) for m in members], allocation)
    taken = [0] * len(members)
    order: list[int] = []
    for g, m in enumerate(members):  # one of each stratum first: every stratum is covered
        order.append(m[0])
        taken[g] = 1
    while len(order) < len(labels):
        t = len(order) + 1
        open_groups = [g for g in range(len(members)) if taken[g] < len(members[g])]
        g = max(open_groups, key=lambda j: (shares[j] * t - taken[j], -j))
        order.append(members[g][taken[g]])
        taken[g] += 1
    return order


def strata_from_column(rows: Sequence[Mapping[str, Any]], column: str) -> list[str]:
    """Each row's stratum: the value of ``column`` as text (a missing value is its own stratum)."""
    if not any(column in row for row in rows):
        columns = sorted({k for row in rows for k in row})
        raise InputValidationError([Problem("--stratify-by", None, column,
                                            f"no such column; the data has {', '.join(columns)}")])
    return ["<missing>" if row.get(column) is None else str(row.get(column)) for row in rows]


def query_texts(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The text of each row that ``diverse`` clusters: its query (or question, input, prompt)."""
    for column in QUERY_COLUMNS:
        if any(isinstance(row.get(column), str) for row in rows):
            return [str(row.get(column) or "") for row in rows]
    raise InputValidationError([Problem(
        "--strategy", None, None, "diverse without --stratify-by clusters the query texts, and the data has "
        f"none of {', '.join(QUERY_COLUMNS)}; name a column with --stratify-by")])


def local_embed(texts: Sequence[str]) -> Any:
    """Embeddings of ``texts`` from the local embedding model (the offline MiniLM by default)."""
    from touchstone.embeddings import LocalEmbedder

    return LocalEmbedder().encode(list(texts))


def cluster_labels(texts: Sequence[str], k: int, seed: int, embed: Embed | None = None) -> list[str]:
    """k-means cluster of each text's embedding (scikit-learn KMeans, seeded; ``k`` capped at the
    number of distinct texts)."""
    import numpy as np
    from sklearn.cluster import KMeans

    vectors = np.asarray((embed or local_embed)(texts), dtype=np.float64)
    distinct = len({tuple(np.round(v, 8)) for v in vectors})
    k = max(1, min(k, distinct))
    if k == 1:
        return ["cluster-0"] * len(texts)
    fitted = KMeans(n_clusters=k, random_state=seed, n_init=10).fit(vectors)
    return [f"cluster-{int(c)}" for c in fitted.labels_]


def order_by_priority(priority: Mapping[int, tuple[float, ...]], n: int, seed: int) -> list[int]:
    """Positions with a priority first (highest first), then the others in a seeded random order."""
    rest = order_random(n, seed)
    tie = {pos: rank for rank, pos in enumerate(rest)}
    first = sorted(priority, key=lambda i: (tuple(-x for x in priority[i]), tie[i]))
    chosen = set(first)
    return first + [i for i in rest if i not in chosen]


# --------------------------------------------------------------------------- signals from stored runs
def matching_runs(
    store: Any, data: str | None, sha: str | None, n_rows: int
) -> list[tuple[Any, dict[Any, int]]]:
    """Stored runs on the same dataset, each with its stored row position -> dataset position map:
    a sampled run by its stored row ids (same file hash); another run over the same file path and
    row count (its positions are the dataset's)."""
    found: list[tuple[Any, dict[Any, int]]] = []
    wanted = os.path.realpath(data) if data else None
    for info in store.list_runs(limit=500):
        config = info.config or {}
        sampling = (config.get("options") or {}).get("sampling")
        if isinstance(sampling, Mapping) and sha is not None and sampling.get("data_sha256") == sha:
            found.append((info, {pos: int(ix) for pos, ix in enumerate(sampling.get("indices") or [])}))
        elif sampling is None and wanted and isinstance(config.get("data"), str) \
                and os.path.realpath(config["data"]) == wanted and config.get("n_rows") == n_rows:
            found.append((info, {pos: pos for pos in range(n_rows)}))
    return found


def difficulty(store: Any, runs: Sequence[tuple[Any, Mapping[Any, int]]]) -> dict[int, tuple[float, ...]]:
    """Each dataset position with evidence of difficulty in ``runs``: (failed scores, scores below
    threshold, judge disagreements, -lowest main value), compared in that order. Disagreement: the
    same metric passed on the row in one run and not in another, or two metrics' verdicts differ."""
    failed: dict[int, int] = {}
    low: dict[int, int] = {}
    verdicts: dict[int, dict[str, set[bool]]] = {}
    for info, positions in runs:
        for line in store.score_values(info.id):
            pos = positions.get(line.idx)
            if pos is None:
                continue
            if str(getattr(line.status, "value", line.status)) == "failed":
                failed[pos] = failed.get(pos, 0) + 1
            if line.passed is False:
                low[pos] = low.get(pos, 0) + 1
            if line.passed is not None:
                key = f"{line.evaluator}.{line.metric}"
                verdicts.setdefault(pos, {}).setdefault(key, set()).add(line.passed)
    out: dict[int, tuple[float, ...]] = {}
    for pos in set(failed) | set(low) | set(verdicts):
        by_metric = verdicts.get(pos, {})
        within = sum(1 for v in by_metric.values() if len(v) > 1)
        across = 1 if by_metric and len(set().union(*by_metric.values())) > 1 else 0
        score = (float(failed.get(pos, 0)), float(low.get(pos, 0)), float(within + across))
        if any(score):
            out[pos] = score
    return out


def uncertainty(rows: Sequence[Mapping[str, Any]], store: Any,
                runs: Sequence[tuple[Any, Mapping[Any, int]]]) -> dict[int, tuple[float, ...]]:
    """Each position's active-learning signal (higher: more uncertain): an uncertainty column of the
    data, else stored scores whose metric name contains ``uncertainty`` (their mean)."""
    for column in UNCERTAINTY_COLUMNS:
        values = {i: row.get(column) for i, row in enumerate(rows)}
        numbers = {i: float(v) for i, v in values.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
        if numbers:
            return {i: (v,) for i, v in numbers.items()}
    sums: dict[int, list[float]] = {}
    if store is not None:
        for info, positions in runs:
            for line in store.score_values(info.id):
                pos = positions.get(line.idx)
                if pos is not None and "uncertainty" in line.metric and isinstance(line.value, (int, float)):
                    sums.setdefault(pos, []).append(float(line.value))
    return {i: (sum(v) / len(v),) for i, v in sums.items()}


# --------------------------------------------------------------------------- taking rows
def take(order: Sequence[int], n: int | None, budget: float | None,
         costs: Sequence[float] | None) -> list[int]:
    """Walk ``order``: at most ``n`` rows, and with ``budget`` only rows whose cost still fits in what
    is left (rows that do not fit are skipped). Positions in ascending order."""
    chosen: list[int] = []
    spent = 0.0
    for pos in order:
        if n is not None and len(chosen) >= n:
            break
        if budget is not None:
            assert costs is not None
            if spent + costs[pos] > budget:
                continue
            spent += costs[pos]
        chosen.append(pos)
    return sorted(chosen)


def _order(request: SampleRequest, rows: Sequence[Mapping[str, Any]], store: Any, runs: list[Any],
           embed: Embed | None, messages: list[str]) -> tuple[list[int], list[str] | None]:
    n = len(rows)
    if request.strategy == "diverse":
        if request.stratify_by:
            labels = strata_from_column(rows, request.stratify_by)
        else:
            k = request.clusters or (max(2, min(8, round(math.sqrt(n / 2)))) if n > 1 else 1)
            labels = cluster_labels(query_texts(rows), k, request.seed, embed)
            messages.append(f"diverse: {len(set(labels))} k-means clusters of the query embeddings")
        return order_diverse(labels, request.seed, request.allocation), labels
    if request.strategy == "difficult":
        signal = difficulty(store, runs) if store is not None else {}
        if not signal:
            messages.append("difficult: no stored run on this dataset has failed, low or disputed rows; "
                            "the rows are taken in random order")
        else:
            messages.append(f"difficult: {len(signal)} rows failed, scored low or were disputed in "
                            f"{len(runs)} earlier run(s); they come first")
        return order_by_priority(signal, n, request.seed), None
    if request.strategy == "uncertain":
        signal = uncertainty(rows, store, runs)
        if not signal:
            raise InputValidationError([Problem(
                "--strategy", None, "uncertain",
                "no active-learning signal: the data has no "
                f"{'/'.join(UNCERTAINTY_COLUMNS)} column and no stored run on this dataset has an "
                "uncertainty score; use another strategy (difficult, diverse, random)")])
        return order_by_priority(signal, n, request.seed), None
    return order_random(n, request.seed), None


def choose_rows(
    rows: Sequence[Mapping[str, Any]],
    request: SampleRequest,
    *,
    costs: Sequence[float] | None = None,
    store: Any = None,
    data: str | os.PathLike[str] | None = None,
    embed: Embed | None = None,
) -> Sample:
    """The sample of ``rows`` that ``request`` asks for. ``costs`` (each row's estimated cost) is
    needed with a budget; ``store`` and ``data`` (the data file) let ``difficult`` and ``uncertain``
    read earlier runs on the same dataset; ``embed`` replaces the local embedding model (tests)."""
    request.check()
    if request.budget is not None and costs is None:
        raise InputValidationError([Problem("--budget", None, None,
                                            "needs each row's estimated cost, and the judge model has no "
                                            "known price: give one with --pricing FILE")])
    path = os.fspath(data) if data is not None else None
    sha = file_sha256(path) if path is not None and os.path.isfile(path) else None
    reads_runs = store is not None and request.strategy in ("difficult", "uncertain")
    runs = matching_runs(store, path, sha, len(rows)) if reads_runs else []
    messages: list[str] = []
    order, labels = _order(request, rows, store, runs, embed, messages)
    chosen = take(order, request.n, request.budget, costs)
    ids = row_ids(rows)
    sample = Sample(request, chosen, [ids[i] for i in chosen], len(rows), messages=messages, data=path,
                    data_sha256=sha)
    if costs is not None:
        sample.estimated_cost = sum(costs[i] for i in chosen)
    if labels is not None:
        for i in chosen:
            sample.strata[labels[i]] = sample.strata.get(labels[i], 0) + 1
        missed = len(set(labels)) - len(sample.strata)
        if missed:
            messages.append(f"diverse: {missed} of {len(set(labels))} strata have no row in the sample "
                            "(too few rows or too small a budget to cover them all)")
    if request.n is not None and request.n > len(rows):
        messages.append(f"--sample {request.n}: the data has only {len(rows)} rows; all are taken")
    return sample


def rows_of_run(store: Any, run_id: str, rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """The dataset positions a stored sampled run used (``--rows-of RUN``: the same rows again, for a
    paired comparison), matched by row id. Raises InputValidationError when the run has no sample or
    its ids are not in this data."""
    info = store.get_run(run_id)
    if info is None:
        raise InputValidationError([Problem("--rows-of", None, run_id, "no such run in the store")])
    sampling = ((info.config or {}).get("options") or {}).get("sampling")
    if not isinstance(sampling, Mapping):
        raise InputValidationError([Problem("--rows-of", None, run_id,
                                            "the run was not sampled: it used every row")])
    ids = row_ids(rows)
    where = {rid: i for i, rid in enumerate(ids)}
    missing = [rid for rid in sampling.get("row_ids") or [] if rid not in where]
    if missing:
        raise InputValidationError([Problem("--rows-of", None, run_id,
                                            f"{len(missing)} of its row ids are not in this data "
                                            f"(first: {missing[0]!r})")])
    return sorted(where[rid] for rid in sampling.get("row_ids") or [])
