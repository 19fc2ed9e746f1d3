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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def load_records(data: DataSource) -> list[Record]:
    """Load rows from a path (``.jsonl``/``.json``, ``.csv``, ``.parquet``), a DataFrame or a list of
    dicts."""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if not path.exists():
            raise InputValidationError([Problem(str(path), None, None, "file not found")])
        if path.is_dir():
            raise InputValidationError([Problem(str(path), None, None, "expected a file, got a directory")])
        suffix = path.suffix.lower()
        if suffix == ".csv":
            return _load_csv(path)
        if suffix in (".parquet", ".pq"):
            return _load_parquet(path)
        return _load_jsonl(path)
    if _is_dataframe(data):
        return _load_frame(data, "<dataframe>")
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        records = []
        problems = []
        for i, row in enumerate(data):
            if not isinstance(row, Mapping):
                problems.append(Problem("<list>", i + 1, None, f"expected a dict, got {type(row).__name__}"))
                continue
            records.append(Record(dict(row), "<list>", i + 1))
        if problems:
            raise InputValidationError(problems)
        if not records:
            raise InputValidationError([Problem("<list>", None, None, "no rows: the list is empty")])
        return records
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


def _is_dataframe(obj: Any) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "to_dict")


def _load_jsonl(path: Path) -> list[Record]:
    raw = path.read_bytes()
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
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(source, number, None, f"invalid JSON at column {exc.colno}: {exc.msg}"))
            continue
        if not isinstance(value, dict):
            kind = type(value).__name__
            problems.append(Problem(source, number, None, f"expected a JSON object, got a JSON {kind}"))
            continue
        records.append(Record(value, source, number))
    if problems:
        raise InputValidationError(problems)
    if not records:
        raise InputValidationError(
            [Problem(source, None, None, "the file has no rows; expected one JSON object per line")]
        )
    return records


def _load_json_array(raw: bytes, source: str) -> list[Record]:
    try:
        values = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputValidationError([Problem(source, None, None, f"invalid JSON: {exc}")]) from None
    return load_records(values) if values else load_records([])


def _maybe_json(value: str) -> Any:
    text = value.strip()
    if text[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
    return value


def _load_csv(path: Path) -> list[Record]:
    source = str(path)
    raw = path.read_bytes()
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
    reader = csv.DictReader(io.StringIO(text, newline=""))
    records = []
    problems = []
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
        records.append(Record(values, source, line))
    if problems:
        raise InputValidationError(problems)
    if not records:
        raise InputValidationError([Problem(source, None, None, "the file has a header but no rows")])
    return records


def _load_parquet(path: Path) -> list[Record]:
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:
        raise InputValidationError(
            [Problem(str(path), None, None, f"not a readable Parquet file: {exc}")]
        ) from None
    return _load_frame(frame, str(path))


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
