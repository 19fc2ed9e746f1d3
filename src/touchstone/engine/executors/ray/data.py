"""A Ray Dataset as a run's input: ``evaluate(data=ray.data.read_parquet(...), ...)``.

Ray Data reads the input (files of any format it reads, with whatever transformations the caller
chained on the dataset) across the cluster, once: the dataset is materialised in the cluster's
object store, in the order of its rows, so the run's passes (checking the rows, scoring them, the
result's rows) all see the same rows in the same order and the caller's transformations are not run
again; each row carries its index in the run (:data:`ROW_INDEX`). Batches are converted as a pandas
DataFrame given as ``data`` is (:func:`~touchstone.data.loaders.load_records`), so the rows, their
checks and their scores are those of the same rows passed as a DataFrame or a list of dicts.

Through the Ray executor, CPU metrics whose inputs are plain columns run in ``map_batches`` over the
dataset where its blocks are (:func:`map_scores`): the rows never pass through the driver, which
receives each batch's results (the rows still to score, by index, as the store takes them) as they
are produced. Ray is imported only when such a dataset is given (``pip install 'touchstone-genai[ray]'``).
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

from touchstone.data.loaders import Record, load_records
from touchstone.data.mapping import Ref
from touchstone.data.streaming import BATCH_ROWS, RowSource, data_digest
from touchstone.data.validation import Validation
from touchstone.engine.executors.base import Plan, ScoredChunk
from touchstone.engine.executors.ray.files import (
    RECORD,
    ROW_INDEX,
    block_items,
    is_file_path,
    read_file_dataset,
)
from touchstone.engine.executors.scoring import direct_inputs, score_wire
from touchstone.errors import InputValidationError, Problem
from touchstone.evaluators.base import Evaluator

SOURCE = "<ray dataset>"
"""How the rows of a dataset are named in problems and results."""


class DatasetSource(RowSource):
    """The rows of a materialised Ray Dataset, read again in batches each time they are needed
    (``source``: how its rows are named, a file's name for a file read by Ray Data)."""

    def __init__(self, dataset: Any, n_rows: int, digest: str, source: str = SOURCE) -> None:
        self.dataset, self.n_rows, self.digest, self.source = dataset, n_rows, digest, source

    def batches(self, batch_rows: int | None = None) -> Iterator[tuple[int, list[Record]]]:
        start = 0
        for frame in self.dataset.iter_batches(batch_size=batch_rows or BATCH_ROWS, batch_format="pandas"):
            if len(frame) == 0:
                continue
            records = frame_records(frame, start, self.source)
            yield start, records
            start += len(records)


def frame_records(frame: Any, start: int, source: str = SOURCE) -> list[Record]:
    """A batch's rows as records, numbered from ``start + 1`` in the whole dataset; its problems
    (values a row cannot hold) as an :class:`InputValidationError` numbered the same way. A file's
    rows (:mod:`.files`) keep their lines and are named ``source``, with the reading problems found
    in the file."""
    if RECORD in frame.columns:  # a file's rows, parsed as a local run parses them
        items = block_items(frame, source)
        problems = [item for item in items if isinstance(item, Problem)]
        records = [item for item in items if isinstance(item, Record)]
        if problems:
            error = InputValidationError(problems)
            error.readable_records = records  # type: ignore[attr-defined]  # checked too, as locally
            raise error
        return records
    if ROW_INDEX in frame.columns:
        frame = frame.drop(columns=[ROW_INDEX])
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
    executor: Any = None,
) -> DatasetSource:
    """The rows of ``dataset`` checked for ``evaluators`` in one pass over its batches (every problem
    of every batch, as a file's), before anything is scored. ``dataset`` may also be a file path
    (with the Ray ``executor``, which names the cluster): Ray Data reads it (:mod:`.files`)."""
    source = SOURCE
    if is_file_path(dataset):  # read in parts, its rows numbered by the parts' tasks
        source = str(Path(dataset))
        materialized = read_file_dataset(dataset, getattr(executor, "address", None))
    else:
        # rows in their order on every pass (Ray Data may otherwise yield blocks as they finish)
        dataset.context.execution_options.preserve_order = True
        materialized = with_row_index(dataset.materialize())
    materialized.context.execution_options.preserve_order = True
    problems: list[Problem] = []
    check = Validation(evaluators, mappings, has_target)
    counted = [0]

    def checked() -> Iterator[list[Record]]:
        start = 0
        for frame in materialized.iter_batches(batch_size=batch_rows, batch_format="pandas"):
            if len(frame) == 0:
                continue
            try:
                batch = frame_records(frame, start, source)
            except InputValidationError as exc:
                problems.extend(exc.problems)
                check.add(getattr(exc, "readable_records", []))  # the lines that could be read too
                start += len(frame)
                continue
            start += len(batch)
            counted[0] += len(batch)
            check.add(batch)
            if not problems:
                yield batch

    # the digest of the same rows given as a list: a resume compares it
    digest = data_digest(checked())
    if counted[0] == 0 and not problems:
        raise InputValidationError([Problem(SOURCE, None, None, "no rows: the dataset is empty")])
    check.finish(reading=problems)  # reading problems first, then the readable rows' own, as a file's
    return DatasetSource(materialized, counted[0], digest, source)


def with_row_index(materialized: Any) -> Any:
    """``materialized`` with each row's index in :data:`ROW_INDEX`, block by block in the cluster
    (the blocks' sizes are counted where they are; only the counts reach the driver)."""
    import ray

    count, index = ray.remote(_count_rows), ray.remote(_index_rows)
    refs = materialized.to_pandas_refs()
    counts = ray.get([count.remote(ref) for ref in refs])
    offsets = [sum(counts[:k]) for k in range(len(counts))]
    indexed: list[Any] = [index.remote(ref, offset) for ref, offset in zip(refs, offsets, strict=True)]
    dataset = ray.data.from_pandas_refs(indexed)
    dataset.context.execution_options.preserve_order = True
    return dataset


def _count_rows(frame: Any) -> int:
    return len(frame)


def _index_rows(frame: Any, offset: int) -> Any:
    frame = frame.copy()
    frame[ROW_INDEX] = range(offset, offset + len(frame))
    return frame


def score_frame(
    frame: Any,
    evaluators: Mapping[str, Evaluator],
    plans: Mapping[str, Plan],
    stored: Mapping[str, Any],
) -> dict[str, Any]:
    """``map_batches``' function: the batch's rows that each evaluator has still to score (not in
    ``stored``, its mask by row index), scored; one pickled :class:`ScoredChunk` per evaluator with
    rows to score."""
    import numpy as np

    out: list[bytes] = []
    if len(frame):
        index = [int(i) for i in frame[ROW_INDEX]]
        records = frame_records(frame, 0)
        for name, ev in evaluators.items():
            mask = stored[name]
            todo = [k for k, i in enumerate(index) if not mask[i]]
            if todo:
                rows = [direct_inputs(plans[name], records[k].data) for k in todo]
                out.append(pickle.dumps(ScoredChunk(name, [index[k] for k in todo], score_wire(ev, rows))))
    scored = np.empty(len(out), dtype=object)
    scored[:] = out
    return {"scored": scored}


async def map_scores(
    source: DatasetSource,
    evaluators: Mapping[str, Evaluator],
    plans: Mapping[str, Plan],
    stored: Mapping[str, Any],
) -> AsyncIterator[ScoredChunk]:
    """A :class:`ScoredChunk` per group of rows still to score, as ``map_batches``
    produces them across the cluster (in no particular order)."""
    mapped = source.dataset.map_batches(
        score_frame, batch_size=BATCH_ROWS, batch_format="pandas",
        fn_kwargs={"evaluators": dict(evaluators), "plans": dict(plans), "stored": dict(stored)},
    )
    batches = iter(mapped.iter_batches(batch_size=None, batch_format="numpy"))
    while True:
        # the driver's event loop keeps running (judge metrics) while it waits for the next batch
        batch = await asyncio.to_thread(next, batches, None)
        if batch is None:
            return
        for blob in batch["scored"]:
            scored: ScoredChunk = pickle.loads(blob)
            yield scored
