"""Reading a data file in batches of rows instead of all at once.

:func:`stream_records` yields lists of :class:`~touchstone.data.loaders.Record` from a JSONL, CSV or
Parquet file (Parquet by record batches within row groups), holding one batch at a time; the rows and
the problems found in them are those :func:`~touchstone.data.loaders.load_records` gives for the
same file. :func:`check_file` makes one such pass to validate a file for a run (reading, then the
evaluators' inputs) and raises one :class:`~touchstone.errors.InputValidationError` listing what is
wrong (the first 20 shown with the count) before anything is scored; a second pass then reads the
rows to score them. Problems are kept (each a few short strings), rows are not.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from touchstone.data.digest_aside import PendingDigest
from touchstone.data.inputs import ReadsInputs
from touchstone.data.loaders import _SURROGATE_ESCAPE as SURROGATE_ESCAPE
from touchstone.data.loaders import (
    CSV_FIELD_LIMIT,
    MAX_DEPTH,
    STRUCTURED_FIELDS,
    Record,
    _check_regular_file,
    _maybe_json,
    _parse_json_line,
    _plain,
    _plainly_fine,
    _row_problem,
    check_values,
    load_unchecked,
)
from touchstone.data.mapping import Ref
from touchstone.data.validation import Validation, validate_records
from touchstone.errors import InputValidationError, Problem

BATCH_ROWS = 10_000


def stream_records(
    path: str | os.PathLike[str], *, batch_rows: int = BATCH_ROWS, problems: list[Problem] | None = None
) -> Iterator[list[Record]]:
    """Batches of at most ``batch_rows`` records of a ``.jsonl``, ``.csv`` or ``.parquet`` file.

    Rows with problems are left out and their :class:`Problem` appended to ``problems``; without a
    list, the first problem raises :class:`InputValidationError`."""
    file = Path(path)
    _check_regular_file(file)
    suffix = file.suffix.lower()
    if suffix == ".csv":
        rows = _csv_rows(file)
    elif suffix in (".parquet", ".pq"):
        rows = _parquet_rows(file)
    elif suffix in (".jsonl", ".ndjson"):
        rows = _jsonl_rows(file)
    else:
        raise InputValidationError(
            [Problem(str(file), None, None, f"cannot stream {suffix or 'a file without suffix'}; "
                     "expected .jsonl, .csv or .parquet")]
        )
    batch: list[Record] = []
    empty = True
    for item in rows:
        if isinstance(item, Problem):
            if problems is None:
                raise InputValidationError([item])
            problems.append(item)
            continue
        empty = False
        batch.append(item)
        if len(batch) >= batch_rows:
            yield batch
            batch = []
    if batch:
        yield batch
    if empty and not (problems or []):
        raise InputValidationError([Problem(str(file), None, None, "the file has no rows")])


def check_file(
    path: str | os.PathLike[str],
    evaluators: Mapping[str, ReadsInputs],
    mappings: Mapping[str, Mapping[str, Ref]],
    *,
    has_target: bool = False,
    batch_rows: int = BATCH_ROWS,
) -> int:
    """Validate ``path`` for ``evaluators`` in one streaming pass; the number of rows. Raises one
    :class:`InputValidationError` with every problem found (reading and inputs)."""
    problems: list[Problem] = []
    n = 0
    for batch in stream_records(path, batch_rows=batch_rows, problems=problems):
        n += len(batch)
        try:
            validate_records(batch, evaluators, mappings, has_target)
        except InputValidationError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputValidationError(problems)
    return n


def _jsonl_rows(path: Path) -> Iterator[Record | Problem]:
    with path.open("rb") as fh:
        yield from jsonl_items(fh, str(path))


def jsonl_items(lines: Iterable[bytes], source: str, first_line: int = 1) -> Iterator[Record | Problem]:
    """The rows and problems of JSON lines (each ``bytes`` with or without its newline), the first
    numbered ``first_line``: a whole file's, or a range of one cut after a newline (the Ray
    executor's parts, :mod:`touchstone.engine.executors.ray.files`). A UTF-8 byte-order mark is
    dropped from line 1 only."""
    for number, line_bytes in enumerate(lines, start=first_line):
        if number == 1 and line_bytes.startswith(b"\xef\xbb\xbf"):
            line_bytes = line_bytes[3:]
        try:
            line = line_bytes.decode("utf-8").rstrip("\n")
        except UnicodeDecodeError as exc:
            yield Problem(source, number, None,
                          f"bytes that are not UTF-8 at column {exc.start + 1}; save the file as UTF-8")
            continue
        if not line.strip():
            continue
        value, problem = _parse_json_line(line, source, number)
        if problem is not None:
            yield problem
            continue
        if not isinstance(value, dict):
            kind = type(value).__name__
            yield Problem(source, number, None, f"expected a JSON object, got a JSON {kind}")
            continue
        if SURROGATE_ESCAPE.search(line) or line.count("[") + line.count("{") > MAX_DEPTH:
            problem = _row_problem(value, source, number)
            if problem is not None:
                yield problem
                continue
        yield Record(value, source, number)


def _csv_rows(path: Path, source: str | None = None) -> Iterator[Record | Problem]:
    """A CSV file's rows and problems, named ``source`` (default: the path)."""
    source = str(path) if source is None else source
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    with path.open("rb") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        reader = csv.DictReader(text)
        try:
            for row in reader:
                line = reader.line_num
                if None in row:
                    yield Problem(source, line, None, "more cells than header columns")
                    continue
                values: dict[str, Any] = {
                    key: _maybe_json(cell) if key in STRUCTURED_FIELDS else cell
                    for key, cell in row.items() if cell is not None
                }
                if all(v == "" for v in values.values()):
                    continue
                problem = None if _plainly_fine(values) else _row_problem(values, source, line)
                if problem is not None:
                    yield problem
                    continue
                yield Record(values, source, line)
        except UnicodeDecodeError:
            yield Problem(source, reader.line_num + 1, None, "bytes that are not UTF-8; save it as UTF-8")
        except csv.Error as exc:
            yield Problem(source, reader.line_num or None, None, f"unreadable CSV: {exc}")


def _parquet_rows(
    path: Path, groups: Sequence[int] | None = None, first_line: int = 1, source: str | None = None
) -> Iterator[Record | Problem]:
    """A Parquet file's rows and problems, named ``source`` (default: the path): its row groups
    ``groups`` (default: all), the first row numbered ``first_line``."""
    import pyarrow.parquet as pq

    source = str(path) if source is None else source
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:
        yield Problem(source, None, None, f"not a readable Parquet file: {exc}")
        return
    line = first_line - 1
    for group in range(parquet.num_row_groups) if groups is None else groups:  # in record batches
        for batch in parquet.iter_batches(row_groups=[group], batch_size=BATCH_ROWS):
            for row in batch.to_pylist():
                line += 1
                values: dict[str, Any] = {}
                for key, value in row.items():  # as loaders._load_frame: nulls left out, JSON cells read
                    plain = _plain(value)
                    if plain is None:
                        continue
                    if isinstance(plain, str) and key in STRUCTURED_FIELDS:
                        plain = _maybe_json(plain)
                    values[str(key)] = plain
                problem = None if _plainly_fine(values) else _row_problem(values, source, line)
                if problem is not None:
                    yield problem
                    continue
                yield Record(values, source, line)


# ------------------------------------------------------------------ sources of a run
STREAM_MIN_BYTES = 8 << 20
"""Files at least this large are read in batches by a run (validated in a first streaming pass,
then read again as they are scored); smaller ones, lists and DataFrames are loaded whole."""
STREAM_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet", ".pq")


class RowSource:
    """The input rows of a run, readable in batches as many times as the run needs (scoring, the
    corpus figures, the rows of the result): ``n_rows``, :meth:`batches`, the records themselves
    when they are held (:attr:`records`, else None) and the digest of the rows' data."""

    n_rows: int
    digest: str
    records: Sequence[Record] | None = None

    def batches(self, batch_rows: int | None = None) -> Iterator[tuple[int, list[Record]]]:
        """``(index of the first row, records)`` batches of at most ``batch_rows`` rows (default
        :data:`BATCH_ROWS`), in order."""
        raise NotImplementedError


class MemorySource(RowSource):
    """Rows loaded whole (a small file, a list of dicts, a DataFrame)."""

    def __init__(self, records: Sequence[Record], digest: str | None = None) -> None:
        """``digest``: the rows' :func:`data_digest` when it is already known."""
        self.records = records
        self.n_rows = len(records)
        self.digest = digest if digest is not None else data_digest([records])

    def batches(self, batch_rows: int | None = None) -> Iterator[tuple[int, list[Record]]]:
        records = self.records
        assert records is not None
        batch_rows = batch_rows or BATCH_ROWS
        for start in range(0, len(records), batch_rows):
            yield start, list(records[start : start + batch_rows])


class FileSource(RowSource):
    """A file read again in batches each time; checked in one streaming pass when opened."""

    def __init__(self, path: Path, n_rows: int, digest: str) -> None:
        self.path, self.n_rows, self.digest = path, n_rows, digest

    def batches(self, batch_rows: int | None = None) -> Iterator[tuple[int, list[Record]]]:
        start = 0
        for batch in stream_records(self.path, batch_rows=batch_rows or BATCH_ROWS):
            yield start, batch
            start += len(batch)
        if start != self.n_rows:
            raise InputValidationError(
                [Problem(str(self.path), None, None, f"the file changed during the run: {start} rows now, "
                         f"{self.n_rows} when it was checked")]
            )


def data_digest(batches: Iterable[Sequence[Record]]) -> str:
    """SHA-256 of the rows' data (each as sorted-key JSON, one per line): what a resume compares."""
    data = hashlib.sha256()
    for batch in batches:
        _digest_batch(data, batch)
    return data.hexdigest()


def _digest_batch(digest: Any, batch: Sequence[Record]) -> None:
    encode, update = _DIGEST_ENCODE, digest.update
    for rec in batch:
        update(encode(rec.data).encode("utf-8", "surrogatepass"))
        update(b"\n")


def _opaque(value: Any) -> str:
    """An object JSON cannot hold, by its type only (its repr may hold a memory address)."""
    return f"<{type(value).__qualname__}>"


_DIGEST_ENCODE = json.JSONEncoder(sort_keys=True, default=_opaque).encode
"""``json.dumps(value, sort_keys=True, default=_opaque)``, its encoder made once."""


def streams(data: Any) -> bool:
    """True when a run reads ``data`` in batches: a JSONL, CSV or Parquet file of at least
    :data:`STREAM_MIN_BYTES` (a ``.jsonl`` holding one JSON array is loaded whole, as before)."""
    if not isinstance(data, (str, os.PathLike)):
        return False
    path = Path(data)
    if path.suffix.lower() not in STREAM_SUFFIXES:
        return False
    try:
        if not path.is_file() or path.stat().st_size < STREAM_MIN_BYTES:
            return False
        with path.open("rb") as fh:
            head = fh.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
    except OSError:
        return False  # the loader names the problem
    return not head.startswith(b"[")


def open_source(
    data: Any,
    evaluators: Mapping[str, ReadsInputs],
    mappings: Mapping[str, Mapping[str, Ref]],
    *,
    has_target: bool,
    batch_rows: int = BATCH_ROWS,
) -> RowSource:
    """The rows of ``data`` checked for ``evaluators``: a large file in one streaming pass, anything
    else loaded whole. Reading problems (a line that is not JSON) come first, then what is wrong
    with the inputs of the rows that could be read, so one broken line hides nothing else.
    Raises :class:`InputValidationError` before anything is scored."""
    if not streams(data):
        try:
            records, unchecked = load_unchecked(data)
        except InputValidationError as exc:
            readable = getattr(exc, "readable_records", None)
            if not readable:
                raise
            check = Validation(evaluators, mappings, has_target)  # the lines that could be read too
            check.add(readable)
            check.finish(reading=exc.problems)
            raise
        pending = PendingDigest(records, data_digest)  # in a forked child where worth it (digest_aside)
        try:
            if unchecked:
                check_values(records)
            validate_records(records, evaluators, mappings, has_target)
            rows_digest = pending.result()
        finally:
            pending.cancel()
        return MemorySource(records, rows_digest)
    path = Path(data)
    problems: list[Problem] = []
    check = Validation(evaluators, mappings, has_target)
    digest = hashlib.sha256()
    n = 0
    for batch in stream_records(path, batch_rows=batch_rows, problems=problems):
        n += len(batch)
        check.add(batch)  # the rows that could be read are checked even when others could not
        if not problems:
            _digest_batch(digest, batch)
    check.finish(reading=problems)
    return FileSource(path, n, digest.hexdigest())
