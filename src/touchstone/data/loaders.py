"""Loaders: JSONL (canonical), CSV, Parquet, pandas DataFrames and lists of dicts -> Records.

Every record remembers where it came from (file and 1-based line, or row number) so that validation
errors can point at it. Problems are collected over the whole input and raised together.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from touchstone.data.kinds import joined_texts
from touchstone.errors import InputValidationError, Problem

STRUCTURED_FIELDS = (
    "context",
    "ground_truth",
    "retrieved_documents",
    "retrieval_ground_truth",
    "messages",
    "conversation",
)


@dataclass
class Record:
    """One input row and where it came from."""

    data: dict[str, Any]
    source: str
    line: int


DataSource = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | Any  # Any: a pandas DataFrame

MAX_DEPTH = 100
"""Deepest nesting of lists and objects accepted in a row: deeper values are refused when loaded
rather than failing in the middle of a run (JSON, the store and the evaluators all recurse)."""
CSV_FIELD_LIMIT = 1 << 30
"""Largest CSV cell read (the csv module's default, 131,072 characters, is too small for documents)."""


def load_records(data: DataSource) -> list[Record]:
    """Load rows from a path (``.jsonl``/``.json``, ``.csv``, ``.parquet``), a DataFrame or a list of
    dicts."""
    records, unchecked = load_unchecked(data)
    return check_values(records) if unchecked else records


def load_unchecked(data: DataSource) -> tuple[list[Record], bool]:
    """:func:`load_records` in two steps: the records, and True when their values are still to be
    checked with :func:`check_values` (rows of a DataFrame or a list of dicts; a file's rows are
    checked as they are parsed)."""
    if isinstance(data, (str, os.PathLike)):
        return _load_path(data), False
    if _is_dataframe(data):
        return _load_frame(data, "<dataframe>"), True
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _load_list(data, "<list>"), True
    raise InputValidationError(
        [
            Problem(
                "data",
                None,
                None,
                f"expected a file path, a pandas DataFrame or a list of dicts, got {type(data).__name__}",
            )
        ]
    )


def _load_path(data: str | os.PathLike[str]) -> list[Record]:
    path = Path(data)
    _check_regular_file(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _load_csv(path)
    if suffix in (".parquet", ".pq"):
        return _load_parquet(path)
    return _load_jsonl(path)


def _check_regular_file(path: Path) -> None:
    """A path that exists and is a regular file: a FIFO, socket or device is refused (reading one could
    block forever or never end)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputValidationError([Problem(str(path), None, None, "file not found")]) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputValidationError([Problem(str(path), None, None, f"cannot read: {reason}")]) from None
    if stat.S_ISDIR(mode):
        raise InputValidationError([Problem(str(path), None, None, "expected a file, got a directory")])
    if not stat.S_ISREG(mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else (
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
        raise InputValidationError(
            [Problem(str(path), None, None, f"expected a regular file, got {kind}; save the rows to a file")]
        )


def _read_bytes(path: Path) -> bytes:
    """The file's bytes; a file that cannot be read (permissions, an I/O error) or that is UTF-16
    (a byte-order mark) or compressed is one Problem rather than one per line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise unreadable(path, exc) from None
    check_text_start(path, raw)
    return raw


def unreadable(path: Path, exc: OSError) -> InputValidationError:
    """The one Problem of a file that cannot be read (permissions, an I/O error)."""
    reason = exc.strerror or type(exc).__name__
    return InputValidationError([Problem(str(path), None, None, f"cannot read: {reason}")])


def check_text_start(path: Path, head: bytes) -> None:
    """Raise one Problem when the file's first bytes say it is UTF-16/32 or compressed."""
    found = next((what for magic, what in _NOT_TEXT if head.startswith(magic)), None)
    if found is not None:
        raise InputValidationError(
            [Problem(str(path), None, None, f"the file is {found}; expected UTF-8 text")]
        )


_NOT_TEXT = (
    (b"\xff\xfe", "UTF-16 or UTF-32 text (save it as UTF-8)"),
    (b"\xfe\xff", "UTF-16 text (save it as UTF-8)"),
    (b"\x1f\x8b", "gzip-compressed (decompress it first)"),
    (b"PK\x03\x04", "a zip archive (extract it first)"),
)


def _load_list(data: Sequence[Any], source: str, *, in_file: bool = False) -> list[Record]:
    """Rows of a list of dicts (``in_file``: a ``.json`` array, whose items are named by index)."""
    records = []
    problems = []
    for i, row in enumerate(data):
        if not isinstance(row, Mapping):
            got = type(row).__name__
            problems.append(
                Problem(source, None, f"[{i}]", f"expected a JSON object, got {got}")
                if in_file else Problem(source, i + 1, None, f"expected a dict, got {got}")
            )
            continue
        records.append(Record(dict(row), source, i + 1))
    if problems:
        raise InputValidationError(problems)
    if not records:
        raise InputValidationError([Problem(source, None, None, "no rows: the list is empty")])
    return records


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89a-fA-F]")
"""A JSON text can only produce a lone surrogate through a ``\\udXXX`` escape."""


def value_problem(value: Any) -> tuple[str, str] | None:
    """What makes a loaded value unusable, as (field path, message): nesting deeper than
    :data:`MAX_DEPTH`, or a lone UTF-16 surrogate (``"\\ud800"``), which no UTF-8 file or database
    can hold. None when the value is fine. Iterative, so any depth is measured safely."""
    if _clean(value):
        return None
    return _walk_problem(value)


_LEAVES = frozenset({int, float, bool, type(None)})


def _clean(value: Any) -> bool:
    """True when :func:`_walk_problem` finds nothing: the same walk without making each item's path
    (a row of 100 ranked documents has hundreds of items; their paths were most of the cost of
    loading such rows), scalars and ASCII texts passed over where they are met."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    push, pop = stack.append, stack.pop
    while stack:
        item, depth = pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                return False
            continue
        if not isinstance(item, (Mapping, list, tuple)):
            continue
        if depth >= MAX_DEPTH:
            return False
        if isinstance(item, Mapping):
            for key in item:
                if isinstance(key, str) and not key.isascii() and _SURROGATE.search(key):
                    return False
            children: Any = item.values()
        else:
            text = joined_texts(item)
            if text is not None:  # a list of texts (ranked ids): one check of them all, at C speed
                if not text.isascii() and _SURROGATE.search(text):
                    return False
                continue
            children = item
        for sub in children:
            kind = type(sub)
            if kind is str:
                if not sub.isascii() and _SURROGATE.search(sub):
                    return False
            elif kind not in _LEAVES:
                push((sub, depth + 1))
    return True


def _walk_problem(value: Any) -> tuple[str, str] | None:
    """:func:`value_problem`'s walk, naming the field of the first problem met."""
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path, "text with a lone UTF-16 surrogate (e.g. \\ud800), which is not valid Unicode"
            continue
        if not isinstance(item, (Mapping, list, tuple)):
            continue
        if depth >= MAX_DEPTH:  # named by its column: the full path would be MAX_DEPTH steps long
            column = re.split(r"[.\[]", path, maxsplit=1)[0]
            return column, f"nested deeper than {MAX_DEPTH} levels of lists and objects"
        if isinstance(item, Mapping):
            for key, sub in item.items():
                where = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    return where, "a key with a lone UTF-16 surrogate, which is not valid Unicode"
                stack.append((where, sub, depth + 1))
        else:
            stack.extend((f"{path}[{i}]", sub, depth + 1) for i, sub in enumerate(item))
    return None


def _row_problem(data: Mapping[str, Any], source: str, line: int) -> Problem | None:
    found = value_problem(data)
    if found is None:
        return None
    field, message = found
    return Problem(source, line, field or None, message)


_SCALARS = (int, float, bool, type(None))


def _plainly_fine(data: Mapping[str, Any]) -> bool:
    """A row of scalars and texts without surrogates (most rows): nothing to walk. ASCII text cannot
    hold a surrogate, and ``isascii`` is checked at C speed."""
    for key, value in data.items():
        if type(value) is str:
            if not value.isascii() and _SURROGATE.search(value):
                return False
        elif type(value) not in _SCALARS:
            return False
        if type(key) is str and not key.isascii() and _SURROGATE.search(key):
            return False
    return True


def check_values(records: list[Record]) -> list[Record]:
    """Records from Python objects (a list of dicts, a DataFrame) checked as files are: raises
    :class:`InputValidationError` naming each row whose values no file or store can hold."""
    problems = [
        p for r in records
        if not _plainly_fine(r.data) and (p := _row_problem(r.data, r.source, r.line)) is not None
    ]
    if problems:
        raise InputValidationError(problems)
    return records


def _is_dataframe(obj: Any) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "to_dict")


def _load_jsonl(path: Path) -> list[Record]:
    raw = _read_bytes(path)
    source = str(path)
    if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is accepted
        raw = raw[3:]
    if not raw.strip():
        raise InputValidationError(
            [Problem(source, None, None, "the file is empty; expected one JSON object per line")]
        )
    records: list[Record] = []
    problems: list[Problem] = []
    stripped = raw.lstrip()
    if path.suffix.lower() == ".json" and stripped.startswith(b"["):
        return _load_json_array(raw, source)
    for number, line_bytes in enumerate(raw.split(b"\n"), start=1):
        try:
            line = line_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(
                Problem(
                    source,
                    number,
                    None,
                    f"bytes that are not UTF-8 at column {exc.start + 1}; save the file as UTF-8",
                )
            )
            continue
        if not line.strip():
            continue  # blank lines (e.g. a trailing newline) are accepted
        value, problem = _parse_json_line(line, source, number)
        if problem is not None:
            problems.append(problem)
            continue
        if not isinstance(value, dict):
            kind = type(value).__name__
            problems.append(Problem(source, number, None, f"expected a JSON object, got a JSON {kind}"))
            continue
        if _SURROGATE_ESCAPE.search(line) or line.count("[") + line.count("{") > MAX_DEPTH:
            problem = _row_problem(value, source, number)
            if problem is not None:
                problems.append(problem)
                continue
        records.append(Record(value, source, number))
    if problems:
        error = InputValidationError(problems)
        error.readable_records = records  # type: ignore[attr-defined]  # checked too (open_source)
        raise error
    if not records:
        raise InputValidationError(
            [Problem(source, None, None, "the file has no rows; expected one JSON object per line")]
        )
    return records


def _parse_json_line(text: str, source: str, line: int | None) -> tuple[Any, Problem | None]:
    """``json.loads`` with every way it can fail as a Problem: invalid JSON, nesting too deep for the
    parser, an integer with too many digits."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} " if line is None else ""
        return None, Problem(source, line, None, f"invalid JSON at {where}column {exc.colno}: {exc.msg}")
    except RecursionError:
        too_deep = "nested too deeply (thousands of levels of lists and objects)"
        return None, Problem(source, line, None, too_deep)
    except ValueError as exc:  # e.g. an integer over Python's 4,300-digit conversion limit
        return None, Problem(source, line, None, f"invalid JSON: {exc}")


def _load_json_array(raw: bytes, source: str) -> list[Record]:
    """A ``.json`` file holding one array of objects: problems name the file and the item (as line)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputValidationError(
            [Problem(source, line, None, "bytes that are not UTF-8; save the file as UTF-8")]
        ) from None
    values, problem = _parse_json_line(text, source, None)
    if problem is not None:
        raise InputValidationError([problem])
    if not isinstance(values, list):
        return check_values(_load_list([values], source, in_file=True))
    return check_values(_load_list(values, source, in_file=True))


def _maybe_json(value: str) -> Any:
    text = value.strip()
    if text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):  # not JSON after all (or too deep: checked as text)
            return value
    return value


def _load_csv(path: Path) -> list[Record]:
    source = str(path)
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputValidationError(
            [Problem(source, line, None, "bytes that are not UTF-8; save the file as UTF-8")]
        ) from None
    if not text.strip():
        raise InputValidationError(
            [Problem(source, None, None, "the file is empty; expected a header line and rows")]
        )
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    records: list[Record] = []
    problems: list[Problem] = []
    try:
        _read_csv_rows(reader, source, records, problems)
    except csv.Error as exc:  # NUL bytes, a cell over the limit...: the line it stopped at
        problem = Problem(source, reader.line_num or None, None, f"unreadable CSV: {exc}")
        raise InputValidationError([problem]) from None
    if problems:
        raise InputValidationError(problems)
    if not records:
        raise InputValidationError([Problem(source, None, None, "the file has a header but no rows")])
    return records


def _read_csv_rows(
    reader: csv.DictReader[str], source: str, records: list[Record], problems: list[Problem]
) -> None:
    for row in reader:
        line = reader.line_num
        if None in row:
            problems.append(Problem(source, line, None, "more cells than header columns"))
            continue
        values: dict[str, Any] = {}
        for key, cell in row.items():
            if cell is None:
                continue
            values[key] = _maybe_json(cell) if key in STRUCTURED_FIELDS else cell
        if all(v == "" for v in values.values()):
            continue
        # JSON cells may hold escapes and nesting
        problem = None if _plainly_fine(values) else _row_problem(values, source, line)
        if problem is not None:
            problems.append(problem)
            continue
        records.append(Record(values, source, line))


def _load_parquet(path: Path) -> list[Record]:
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:
        raise InputValidationError(
            [Problem(str(path), None, None, f"not a readable Parquet file: {exc}")]
        ) from None
    return check_values(_load_frame(frame, str(path)))


def _plain(value: Any) -> Any:
    """numpy/pandas values -> plain Python (lists, dicts, str, int, float, None)."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _load_frame(frame: Any, source: str) -> list[Record]:
    if len(frame) == 0:
        raise InputValidationError([Problem(source, None, None, "no rows: the table is empty")])
    records = []
    for i, row in enumerate(frame.to_dict(orient="records")):
        values = {}
        for k, v in row.items():
            plain = _plain(v)
            if plain is None:
                continue
            if isinstance(plain, str) and k in STRUCTURED_FIELDS:
                plain = _maybe_json(plain)
            values[str(k)] = plain
        records.append(Record(values, source, i + 1))
    return records
