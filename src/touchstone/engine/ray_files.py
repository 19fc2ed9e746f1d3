"""A file path run through the Ray executor: Ray Data reads the file, the project's rules parse it.

``evaluate(data="rows.jsonl", executor="ray")`` (or ``--executor ray``) reads the file with
``ray.data.read_binary_files`` in the cluster, not on the driver. Ray's own JSON and CSV readers would
give other rows than a local run (Arrow's types for mixed columns, its CSV quoting and empty cells,
no line numbers in their errors), so the bytes are parsed in ``map_batches`` by the same functions a
local run uses (:mod:`touchstone.data.loaders` for a file loaded whole, :mod:`touchstone.data.streaming`
for a large one): the same rows with the same types, the same problems with the same lines and
messages. Each row travels pickled, as its :class:`~touchstone.data.loaders.Record` (or a
:class:`~touchstone.errors.Problem`), in one column (:data:`RECORD`); the rows are then split into
blocks in their order so that the metrics' ``map_batches`` runs over several of them.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
from pathlib import Path
from typing import Any, cast

from touchstone.data.loaders import Record, _check_regular_file
from touchstone.data.streaming import streams
from touchstone.errors import InputValidationError, Problem

RECORD = "__touchstone_record__"
"""The column holding each row's pickled Record (or a reading Problem) in a file's dataset."""
BLOCK_ROWS = 2_000
"""Rows per block once the file is parsed: the metrics' map_batches runs over the blocks in parallel."""
MAX_BLOCKS = 200

log = logging.getLogger(__name__)


def is_file_path(data: Any) -> bool:
    """True for a path (``str`` or ``os.PathLike``) rather than rows or a dataset."""
    return isinstance(data, (str, os.PathLike))


def read_file_dataset(path: str | os.PathLike[str], address: str | None = None) -> Any:
    """A Ray Dataset of the file's rows in their order, one pickled Record or Problem per row
    (:data:`RECORD`), read by Ray Data in the cluster at ``address`` (connected if need be) and
    parsed as a local run parses it."""
    from touchstone.engine.ray_executor import connect

    file = Path(path)
    _check_regular_file(file)  # a missing file, a directory or a FIFO: named before Ray is started
    ray = connect(address)
    streamed = streams(file)  # a large file: the streaming reader's rules, as a local run
    dataset: Any = ray.data.read_binary_files(str(file.resolve()), include_paths=False)
    dataset.context.execution_options.preserve_order = True
    parsed = dataset.map_batches(
        parse_file_frame, batch_size=None, batch_format="pandas",
        fn_kwargs={"name": str(file), "suffix": file.suffix, "streamed": streamed},
    ).materialize()
    n = parsed.count()
    blocks = max(1, min(MAX_BLOCKS, -(-n // BLOCK_ROWS)))
    log.info("read by Ray Data: %s (%d rows, %d blocks)", file, n, blocks)
    return parsed.repartition(blocks) if blocks > 1 else parsed


class _FileBytes(io.BytesIO):
    """A file's bytes standing in for its path: the loaders open, read and name it as the file."""

    def __init__(self, raw: bytes, name: str, suffix: str) -> None:
        super().__init__(raw)
        self.raw, self.label, self.suffix = raw, name, suffix

    def __str__(self) -> str:
        return self.label

    def __fspath__(self) -> str:  # never opened by name: the rows come from the bytes
        return self.label

    def open(self, mode: str = "rb") -> io.BytesIO:
        return io.BytesIO(self.raw)

    def read_bytes(self) -> bytes:
        return self.raw


def parse_file_frame(frame: Any, name: str, suffix: str, streamed: bool) -> Any:
    """``map_batches``' function: each file's bytes (``bytes`` column) as its rows, pickled in order,
    with any reading problem in its place."""
    import numpy as np
    import pandas as pd

    items: list[bytes] = []
    for raw in frame["bytes"]:
        items.extend(pickle.dumps(item) for item in parse_bytes(bytes(raw), name, suffix, streamed))
    column = np.empty(len(items), dtype=object)
    column[:] = items
    return pd.DataFrame({RECORD: column})


def parse_bytes(raw: bytes, name: str, suffix: str, streamed: bool) -> list[Record | Problem]:
    """The rows and problems of a file's bytes, as :func:`~touchstone.data.streaming.open_source`
    reads the file: streamed (``streamed``: every problem in its place) or loaded whole."""
    from touchstone.data import loaders

    file = cast(Path, _FileBytes(raw, name, suffix))
    low = suffix.lower()
    try:
        if streamed:  # as stream_records reads it (the driver checked the real path is a regular file)
            from touchstone.data import streaming

            rows = streaming._csv_rows if low == ".csv" else (
                streaming._parquet_rows if low in (".parquet", ".pq") else streaming._jsonl_rows)
            out = list(rows(file))
            if not out:
                return [Problem(name, None, None, "the file has no rows")]
            return out
        if low == ".csv":
            return list(loaders._load_csv(file))
        if low in (".parquet", ".pq"):
            return list(loaders._load_parquet(file))
        return list(loaders._load_jsonl(file))
    except InputValidationError as exc:
        return list(exc.problems)
