"""A file path run through the Ray executor: Ray Data reads the file in parts, the project's rules parse it.

``evaluate(data="rows.jsonl", executor="ray")`` (or ``--executor ray``) reads the file in Ray Data
tasks in the cluster, not on the driver. Ray's own JSON and CSV readers would give other rows than a
local run (Arrow's types for mixed columns, its CSV quoting and empty cells, no line numbers in their
errors), so each part of the file is parsed by the same functions a local run uses
(:mod:`touchstone.data.streaming`, :mod:`touchstone.data.loaders`): the same rows with the same
types, the same problems with the same lines and messages. Each row travels as its data, pickled (or
its :class:`~touchstone.errors.Problem`), in one column (:data:`RECORD`), beside its line
(:data:`LINE`) and its index in the run (:data:`ROW_INDEX`), in blocks of at most
:data:`BLOCK_BYTES`, the parts' blocks in the file's order; the file's name is not repeated on every
row (the driver knows it). A part knows the index of its first row, so the dataset needs no second
pass to number its rows.

How a file is cut into parts (one Ray Data task each, run in parallel; a task holds its part's bytes
and one block of rows, never the file):

* **JSON lines** (``.jsonl``, and any file a local run reads as JSON lines): byte ranges of about
  :func:`range_bytes` each, cut just after a newline. A newline byte never occurs inside a multi-byte
  UTF-8 character, so a cut never splits one, and a CRLF line keeps its ``\\r`` as a local run's does.
  A first pass of Ray tasks finds each range's cuts and counts its newlines and its rows (the lines
  that are not blank), so each range knows the number of its first line and row; each is then
  parsed by the streaming reader's rules (:func:`~touchstone.data.streaming.jsonl_items`), whose rows
  and problems, line by line, are also those of a file loaded whole. What a file loaded whole checks
  of the file as a whole is checked by the driver: its first bytes (UTF-16, gzip, zip), and, when no
  range gave a row or a problem, whether the file is empty or only blank lines (the same messages).
* **Parquet** files a local run streams (:func:`~touchstone.data.streaming.streams`): consecutive row
  groups of about :func:`range_bytes` (uncompressed, from the footer), numbered from the rows of the
  groups before them. A smaller Parquet file is read whole by one task, as a local run reads it with
  pandas, whose column types depend on the whole file (an integer column with a null anywhere is
  read as floats).
* **CSV is not split**: a quoted cell may hold newlines, and only a sequential read from the header
  knows whether a newline ends a record (counting quotes is not the ``csv`` module's rule for a
  quote inside an unquoted cell). A large CSV file is read by one task streaming through it (one
  block of rows in memory at a time, on one core); a small one, and a ``.json`` array, whole by one
  task, as a local run loads them.

The file must be readable at the same path on the driver (which checks it and reads its first bytes)
and in the cluster's workers (one machine, or shared storage).
"""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from touchstone.data import streaming
from touchstone.data.loaders import Record, _check_regular_file, check_text_start, unreadable
from touchstone.engine.executors.ray.connect import connect
from touchstone.errors import InputValidationError, Problem

RECORD = "__touchstone_record__"
"""The column holding each row's pickled data (or a reading Problem) in a file's dataset."""
LINE = "__touchstone_line__"
"""The column holding each row's line in the file (its row number for Parquet)."""
ROW_INDEX = "__touchstone_row__"
"""The column holding each row's index in the run (a dataset's rows get it when the run opens it)."""
BLOCK_BYTES = 4 << 20
"""Largest block a part's task produces (Ray Data's ``target_max_block_size`` while the file is
read): a task holds one, and the metrics' map_batches runs over the blocks in parallel."""
YIELD_ROWS = 1_000
"""Rows a part's task hands Ray Data at a time (which gathers them into blocks)."""
MIN_RANGE_BYTES = 1 << 20
MAX_RANGE_BYTES = 32 << 20
RANGES_PER_CPU = 4
"""A part is about a file's size over this many times the cluster's CPUs, within the bounds above."""
SCAN_BYTES = 1 << 20
"""Bytes the driver reads at a time when it looks through a file (past leading whitespace; whether a
file without rows holds only blank lines)."""
_WHITESPACE = b" \t\n\r\x0b\x0c"
"""What ``bytes.strip`` removes: a file loaded whole with nothing else is "empty"."""
_BOM = b"\xef\xbb\xbf"

log = logging.getLogger(__name__)


def is_file_path(data: Any) -> bool:
    """True for a path (``str`` or ``os.PathLike``) rather than rows or a dataset."""
    return isinstance(data, (str, os.PathLike))


def range_bytes(size: int, cpus: float) -> int:
    """The bytes of a part of a ``size``-byte file on a cluster of ``cpus`` CPUs: about
    :data:`RANGES_PER_CPU` parts per CPU, each from :data:`MIN_RANGE_BYTES` to :data:`MAX_RANGE_BYTES`."""
    wanted = size // max(1, int(cpus * RANGES_PER_CPU))
    return max(1, min(MAX_RANGE_BYTES, max(MIN_RANGE_BYTES, wanted)))


def read_file_dataset(
    path: str | os.PathLike[str], address: str | None = None, *, part_bytes: int | None = None
) -> Any:
    """A materialised Ray Dataset of the file's rows in their order (:data:`RECORD`, :data:`LINE`,
    :data:`ROW_INDEX`), read in parts (of about ``part_bytes``; default :func:`range_bytes`) by Ray Data
    in the cluster at ``address`` (connected if need be) and parsed as a local run parses the file.
    Raises :class:`InputValidationError` for what a local run finds wrong with the file as a whole."""
    file = Path(path)
    _check_regular_file(file)  # a missing file, a directory or a FIFO: named before Ray is started
    streamed = streaming.streams(file)  # a large file: the streaming reader's rules, as a local run
    name, real, low = str(file), str(file.resolve()), file.suffix.lower()
    size = file.stat().st_size
    kind = _kind(file, low, streamed)  # what is wrong with the file as a whole: named before Ray starts
    ray = connect(address)
    if part_bytes is None:
        part_bytes = range_bytes(size, ray.cluster_resources().get("CPU", 1))
    if kind == "jsonl":  # each range's cuts and newlines found by a task of its own, in parallel
        scan = ray.remote(scan_range)
        starts = range(0, size, part_bytes)
        parts = jsonl_parts(ray.get([scan.remote(real, s, min(s + part_bytes, size), size) for s in starts]))
    elif kind == "parquet":
        parts = _parquet_parts(file, part_bytes)
    else:  # CSV (streamed by one task) or a file loaded whole
        parts = [{"kind": kind, "suffix": file.suffix, "row": 0}]
    if not parts:  # an empty file: nothing for Ray to read
        raise InputValidationError([_no_rows(file, kind, streamed)])
    rows = [{"part": json.dumps(part)} for part in parts]
    items = ray.data.from_items(rows, override_num_blocks=len(parts))
    items.context.execution_options.preserve_order = True
    items.context.target_max_block_size = BLOCK_BYTES
    dataset = items.map_batches(
        read_parts, batch_size=1, batch_format="numpy",
        fn_kwargs={"path": real, "name": name, "block_rows": YIELD_ROWS},
    ).materialize()
    n = dataset.count()
    if n == 0:
        raise InputValidationError([_no_rows(file, kind, streamed)])
    log.info("read by Ray Data: %s (%d rows, %d parts, %d blocks)", file, n, len(parts), dataset.num_blocks())
    return dataset


def _kind(file: Path, low: str, streamed: bool) -> str:
    """How the file is read: ``jsonl`` (ranges), ``parquet`` (row groups), ``csv`` (one streaming
    task) or ``whole`` (one task, the loaders' rules). Checks the first bytes as a file loaded whole
    is checked."""
    if low == ".csv":
        return "csv" if streamed else "whole"
    if low in (".parquet", ".pq"):
        return "parquet" if streamed else "whole"
    if streamed:
        return "jsonl"
    try:
        with file.open("rb") as fh:
            head = fh.read(4096)
            first = head.removeprefix(_BOM).lstrip()
            while not first and (more := fh.read(SCAN_BYTES)):  # leading whitespace: read on
                first = more.lstrip()
    except OSError as exc:
        raise unreadable(file, exc) from None
    check_text_start(file, head)
    if low == ".json" and first.startswith(b"["):
        return "whole"  # one JSON array, parsed whole as a local run parses it
    return "jsonl"


def _no_rows(file: Path, kind: str, streamed: bool) -> Problem:
    """What a local run says of a file whose parts gave no row and no problem."""
    if streamed:
        return Problem(str(file), None, None, "the file has no rows")
    blank = _only_whitespace(file)
    what = "the file is empty" if blank else "the file has no rows"
    return Problem(str(file), None, None, f"{what}; expected one JSON object per line")


def _only_whitespace(file: Path) -> bool:
    """True when the file holds nothing but a byte-order mark and ASCII whitespace (read in chunks)."""
    with file.open("rb") as fh:
        first = True
        while chunk := fh.read(SCAN_BYTES):
            if first:
                chunk, first = chunk.removeprefix(_BOM), False
            if chunk.translate(None, _WHITESPACE):
                return False
    return True


# ------------------------------------------------------------------ JSON lines: byte ranges
def jsonl_parts(spans: Iterable[tuple[int, int, int, int]]) -> list[dict[str, Any]]:
    """The parts of a JSON lines file from its ranges' :func:`scan_range` (in the file's order), each
    with the number of its first line and the index of its first row; a range with no line starting
    in it is left out."""
    parts: list[dict[str, Any]] = []
    line, row = 1, 0
    for first, last, newlines, rows in spans:
        if last > first:  # empty when a line is longer than a range: its start is in an earlier range
            parts.append({"kind": "jsonl", "start": first, "end": last, "line": line, "row": row})
        line, row = line + newlines, row + rows
    return parts


def scan_range(path: str, start: int, end: int, size: int) -> tuple[int, int, int, int]:
    """The range of whole lines that starts in ``[start, end)`` (its first and last byte positions,
    each just after a newline or at an end of the file), the number of newlines in it and the number
    of rows and problems its lines give (:func:`~touchstone.data.streaming.jsonl_items` leaves out
    only blank lines)."""
    with open(path, "rb") as fh:
        first, last = _line_start(fh, start, size), _line_start(fh, end, size)
        fh.seek(first)
        chunk = fh.read(last - first)
    return first, last, chunk.count(b"\n"), _not_blank(chunk, first == 0)


def _not_blank(chunk: bytes, first_line: bool) -> int:
    """The lines of ``chunk`` that are not blank as :func:`~touchstone.data.streaming.jsonl_items`
    reads them (bytes that are not UTF-8 count: they are a problem)."""
    lines = chunk.split(b"\n")
    if first_line and lines[0].startswith(_BOM):
        lines[0] = lines[0][3:]
    n = 0
    for line in lines:
        if not line.strip():  # ASCII whitespace only: blank (the common case, checked at C speed)
            continue
        try:
            n += bool(line.decode("utf-8").strip())  # str.strip also drops \x1c-\x1f, NBSP...
        except UnicodeDecodeError:
            n += 1
    return n


def _line_start(fh: BinaryIO, offset: int, size: int) -> int:
    """The first position at or after ``offset`` where a line starts (just after a newline), or
    ``size``."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    fh.seek(offset - 1)
    at = offset - 1
    while chunk := fh.read(64 << 10):
        found = chunk.find(b"\n")
        if found >= 0:
            return at + found + 1
        at += len(chunk)
    return size


# ------------------------------------------------------------------ Parquet: row groups
def _parquet_parts(file: Path, part_bytes: int) -> list[dict[str, Any]]:
    """Consecutive row groups of about ``part_bytes`` each, with the number of their first row; a
    file Parquet cannot open is one problem, as a local run names it."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(file).metadata
    except Exception as exc:
        raise InputValidationError(
            [Problem(str(file), None, None, f"not a readable Parquet file: {exc}")]
        ) from None
    parts: list[dict[str, Any]] = []
    groups: list[int] = []
    line = first = 1
    held = 0
    for group in range(meta.num_row_groups):
        info = meta.row_group(group)
        if groups and held + info.total_byte_size > part_bytes:  # each row a row or a problem
            parts.append({"kind": "parquet", "groups": groups, "line": first, "row": first - 1})
            groups, held, first = [], 0, line
        groups.append(group)
        held += info.total_byte_size
        line += info.num_rows
    if groups:
        parts.append({"kind": "parquet", "groups": groups, "line": first, "row": first - 1})
    return parts


# ------------------------------------------------------------------ in the tasks
def read_parts(batch: dict[str, Any], path: str, name: str, block_rows: int) -> Iterator[dict[str, Any]]:
    """``map_batches``' function: each part of the file (``part`` column, JSON) as its rows, at most
    ``block_rows`` at a time, in order, each problem in its row's place."""
    for text in batch["part"]:
        part = json.loads(str(text))
        yield from _blocks(part_items(part, path, name), part["row"], block_rows)


def part_items(part: dict[str, Any], path: str, name: str) -> Iterator[Record | Problem]:
    """The rows and problems of one part of the file at ``path``, named ``name`` as the user gave it."""
    kind = part["kind"]
    if kind == "jsonl":
        with open(path, "rb") as fh:
            fh.seek(part["start"])
            chunk = fh.read(part["end"] - part["start"])
        yield from streaming.jsonl_items(io.BytesIO(chunk), name, part["line"])
    elif kind == "parquet":
        yield from streaming._parquet_rows(Path(path), part["groups"], part["line"], name)
    elif kind == "csv":
        yield from streaming._csv_rows(Path(path), name)
    else:
        yield from parse_bytes(Path(path).read_bytes(), name, part["suffix"])


def _blocks(items: Iterable[Record | Problem], row: int, block_rows: int) -> Iterator[dict[str, Any]]:
    """The items as columns (their data or problem pickled, their line, their row index from ``row``),
    ``block_rows`` at a time."""
    import numpy as np

    def block(blobs: list[bytes], lines: list[int]) -> dict[str, Any]:
        column = np.empty(len(blobs), dtype=object)
        column[:] = blobs
        return {RECORD: column, LINE: np.array(lines, dtype=np.int64),
                ROW_INDEX: np.arange(row, row + len(blobs), dtype=np.int64)}

    blobs: list[bytes] = []
    lines: list[int] = []
    for item in items:
        if isinstance(item, Record):
            blobs.append(pickle.dumps(item.data, protocol=pickle.HIGHEST_PROTOCOL))
            lines.append(item.line)
        else:
            blobs.append(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))
            lines.append(item.line or 0)
        if len(blobs) >= block_rows:
            yield block(blobs, lines)
            row += len(blobs)
            blobs, lines = [], []
    if blobs:
        yield block(blobs, lines)


def block_items(frame: Any, source: str) -> list[Record | Problem]:
    """A block's rows (:data:`RECORD` and :data:`LINE` columns) as Records of ``source``, and its
    problems."""
    items: list[Record | Problem] = []
    for blob, line in zip(frame[RECORD], frame[LINE], strict=True):
        item = pickle.loads(blob)
        items.append(item if isinstance(item, Problem) else Record(item, source, int(line)))
    return items


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


def parse_bytes(raw: bytes, name: str, suffix: str) -> list[Record | Problem]:
    """The rows and problems of a whole file's bytes, as :func:`~touchstone.data.loaders.load_records`
    reads the file (a small CSV or Parquet file, a ``.json`` array)."""
    from touchstone.data import loaders

    file = cast(Path, _FileBytes(raw, name, suffix))
    low = suffix.lower()
    try:
        if low == ".csv":
            return list(loaders._load_csv(file))
        if low in (".parquet", ".pq"):
            return list(loaders._load_parquet(file))
        return list(loaders._load_jsonl(file))
    except InputValidationError as exc:
        return list(exc.problems)
