"""A Ray Dataset as a run's input: ``evaluate(data=ray.data.read_parquet(...), ...)``.

Ray Data reads the input (files of any format it reads, with whatever transformations the caller
chained on the dataset) across the cluster, once: the dataset is materialised in the cluster's
object store, in the order of its rows, so the run's passes (checking the rows, scoring them, the
result's rows) all see the same rows in the same order and the caller's transformations are not run
again. The driver holds one batch at a time, converted as a pandas DataFrame given as ``data`` is
(:func:`~touchstone.data.loaders.load_records`), so the rows, their checks and their scores are those
of the same rows passed as a DataFrame or a list of dicts. Ray is imported only when such a dataset
is given (``pip install 'touchstone[ray]'``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from touchstone.data.loaders import Record, load_records
from touchstone.data.mapping import Ref
from touchstone.data.streaming import BATCH_ROWS, RowSource, data_digest
from touchstone.data.validation import Validation
from touchstone.errors import InputValidationError, Problem
from touchstone.evaluators.base import Evaluator

SOURCE = "<ray dataset>"
"""How the rows of a dataset are named in problems and results."""


def is_ray_dataset(data: Any) -> bool:
    """True for a ``ray.data.Dataset`` (checked without importing Ray)."""
    return type(data).__module__.startswith("ray.data.") and hasattr(data, "iter_batches")


class DatasetSource(RowSource):
    """The rows of a materialised Ray Dataset, read again in batches each time they are needed."""

    def __init__(self, dataset: Any, n_rows: int, digest: str) -> None:
        self.dataset, self.n_rows, self.digest = dataset, n_rows, digest

    def batches(self, batch_rows: int | None = None) -> Iterator[tuple[int, list[Record]]]:
        start = 0
        for frame in self.dataset.iter_batches(batch_size=batch_rows or BATCH_ROWS, batch_format="pandas"):
            if len(frame) == 0:
                continue
            records = frame_records(frame, start)
            yield start, records
            start += len(records)


def frame_records(frame: Any, start: int) -> list[Record]:
    """A batch's rows as records, numbered from ``start + 1`` in the whole dataset; its problems
    (values a row cannot hold) as an :class:`InputValidationError` numbered the same way."""
    try:
        records = load_records(frame)
    except InputValidationError as exc:
        raise InputValidationError([
            Problem(SOURCE, None if p.line is None else p.line + start, p.field, p.message)
            for p in exc.problems
        ]) from None
    return [Record(r.data, SOURCE, start + r.line) for r in records]


def open_dataset(
    dataset: Any,
    evaluators: Mapping[str, Evaluator],
    mappings: Mapping[str, Mapping[str, Ref]],
    *,
    has_target: bool,
    batch_rows: int = BATCH_ROWS,
) -> DatasetSource:
    """The rows of ``dataset`` checked for ``evaluators`` in one pass over its batches (every problem
    of every batch, as a file's), before anything is scored."""
    # rows in their order on every pass (Ray Data may otherwise yield blocks as they finish)
    dataset.context.execution_options.preserve_order = True
    materialized = dataset.materialize()
    problems: list[Problem] = []
    check = Validation(evaluators, mappings, has_target)
    counted = [0]

    def checked() -> Iterator[list[Record]]:
        start = 0
        for frame in materialized.iter_batches(batch_size=batch_rows, batch_format="pandas"):
            if len(frame) == 0:
                continue
            try:
                batch = frame_records(frame, start)
            except InputValidationError as exc:
                problems.extend(exc.problems)
                start += len(frame)
                continue
            start += len(batch)
            counted[0] += len(batch)
            if not problems:  # reading problems are reported alone, as a file's
                check.add(batch)
                yield batch

    # the digest of the same rows given as a list: a resume compares it
    digest = data_digest(checked())
    if problems:
        raise InputValidationError(problems)
    if counted[0] == 0:
        raise InputValidationError([Problem(SOURCE, None, None, "no rows: the dataset is empty")])
    check.finish()
    return DatasetSource(materialized, counted[0], digest)
