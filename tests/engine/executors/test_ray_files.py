"""How the Ray executor cuts a file into parts (``engine/executors/ray/files.py``), without a cluster: the
functions its Ray tasks run, called here in order over every part. Over every range size from one
byte up, a JSON lines file read in ranges gives a local run's rows and problems (file, line, field,
message) in the file's order: blank lines, CRLF lines, a byte-order mark, a bad line in a middle
range, multi-byte UTF-8 characters at every position relative to a cut, with and without a final
newline. A Parquet file read by row groups gives the streaming reader's rows, numbered across
groups. What a local run says of a file as a whole (UTF-16, empty, only blank lines) is said the same
way. (The same files through a real cluster: ``test_ray_executor.py``.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from touchstone.data import streaming
from touchstone.data.loaders import Record, load_records
from touchstone.engine.executors.ray import files as ray_files
from touchstone.errors import InputValidationError, Problem


def read_in_ranges(path: Path, part_bytes: int) -> tuple[list[dict[str, Any]], list[Record | Problem]]:
    """The parts of ``path`` and their items, as ``read_file_dataset``'s tasks make them, read back
    from the blocks they make (each part's first row index checked against the rows before it)."""
    size = path.stat().st_size
    spans = [ray_files.scan_range(str(path), start, min(start + part_bytes, size), size)
             for start in range(0, size, part_bytes)]
    parts = ray_files.jsonl_parts(spans)
    items: list[Record | Problem] = []
    for part in parts:
        assert part["row"] == len(items)
        for block in ray_files.read_parts({"part": [json.dumps(part)]}, str(path), str(path), 3):
            n = len(block[ray_files.LINE])
            assert list(block[ray_files.ROW_INDEX]) == list(range(len(items), len(items) + n))
            items.extend(ray_files.block_items(block, str(path)))
    return parts, items


def local_whole(path: Path) -> list[Record] | list[Problem]:
    """A local run's reading of the file loaded whole: its records, or its problems."""
    try:
        return load_records(path)
    except InputValidationError as exc:
        return list(exc.problems)


def tricky_lines() -> list[str]:
    """JSON lines with multi-byte characters (2, 3 and 4 bytes) at many offsets, blank lines (empty,
    spaces, a tab, a no-break space), a bad line and a non-object in the middle, a deep line."""
    lines = []
    for i in range(24):
        pad = "x" * (i % 5)  # shifts each line's multi-byte characters against the cuts
        lines.append(json.dumps({"response": f"{pad}é€😀中{i}", "ground_truth": "é" * (i % 4)},
                                ensure_ascii=False))
    lines[4:4] = ["", "   ", "\t", "\u00a0"]
    lines[13] = '{"response": "cut short'
    lines[15] = "[1, 2]"
    lines[18] = '{"response": "\\ud800 lone"}'
    return lines


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("final", [True, False])
@pytest.mark.parametrize("bom", [True, False])
def test_jsonl_ranges_give_the_local_runs_rows_and_problems(
    tmp_path: Path, newline: str, final: bool, bom: bool
) -> None:
    path = tmp_path / "rows.jsonl"
    text = newline.join(tricky_lines()) + (newline if final else "")
    raw = (b"\xef\xbb\xbf" if bom else b"") + text.encode()
    path.write_bytes(raw)
    streamed = list(streaming._jsonl_rows(path))
    whole = local_whole(path)
    assert [p for p in streamed if isinstance(p, Problem)] == whole  # the file's problems
    assert [p.line for p in whole] == [14, 16, 19]  # after the 4 blank lines (lines 5-8)
    for part_bytes in [*range(1, 90), 150, 400, len(raw) - 1, len(raw), len(raw) + 1]:
        parts, items = read_in_ranges(path, part_bytes)
        assert items == streamed, part_bytes
        for part in parts:  # cut after a newline (never inside a character), or at the file's ends
            assert part["start"] == 0 or raw[part["start"] - 1 : part["start"]] == b"\n"
            assert part["end"] == len(raw) or raw[part["end"] - 1 : part["end"]] == b"\n"
        assert [p["start"] for p in parts[1:]] == [p["end"] for p in parts[:-1]]  # every byte once
    parts, _ = read_in_ranges(path, 40)
    assert len(parts) > 10
    middle = [p for p in parts if p["start"] > len(raw) // 3 and p["end"] < 2 * len(raw) // 3]
    assert middle and any(p["line"] > 10 for p in middle)


def test_jsonl_ranges_of_good_rows_are_the_whole_files_records(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    lines = [line for line in tricky_lines() if line.startswith('{"response": "x') or "é€" in line]
    lines = [line for line in lines if "\\ud800" not in line and "cut short" not in line]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n\r\n".join(lines).encode())  # CRLF, a blank line between rows
    whole = load_records(path)
    assert len(whole) == len(lines) and whole[1].line == 3
    for part_bytes in (1, 7, 33, 100, 10_000):
        assert read_in_ranges(path, part_bytes)[1] == whole


def test_a_line_longer_than_several_ranges_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    long = json.dumps({"response": "é" * 500, "ground_truth": "a"}, ensure_ascii=False)
    path.write_text("\n".join(['{"response": "a"}', long, '{"response": "b"}']), encoding="utf-8")
    parts, items = read_in_ranges(path, 10)
    assert items == list(streaming._jsonl_rows(path))
    assert [i.line for i in items] == [1, 2, 3]
    assert len(parts) == 3  # the ranges inside the long line have no line of their own


def test_parquet_parts_by_row_groups(tmp_path: Path) -> None:
    import pandas as pd

    rows = [{"response": f"r{i}", "ground_truth": "t" if i % 3 else None, "n": i} for i in range(230)]
    for row in rows:
        row["context"] = "[1]"
    rows[120]["context"] = "[" * 101 + "]" * 101  # too deep: a problem in a middle group
    path = tmp_path / "rows.parquet"
    pd.DataFrame(rows).to_parquet(path, row_group_size=40)
    expected = list(streaming._parquet_rows(path))
    assert [p.line for p in expected if isinstance(p, Problem)] == [121]
    for part_bytes in (1, 3000, 10**9):
        parts = ray_files._parquet_parts(path, part_bytes)
        items = [i for part in parts for i in ray_files.part_items(part, str(path), str(path))]
        assert items == expected
        assert sum(len(p["groups"]) for p in parts) == 6
    assert [(p["line"], p["row"]) for p in ray_files._parquet_parts(path, 1)] == [
        (1 + 40 * k, 40 * k) for k in range(6)]
    assert len(ray_files._parquet_parts(path, 10**9)) == 1
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    with pytest.raises(InputValidationError) as caught:
        ray_files._parquet_parts(broken, 100)
    assert caught.value.problems == [p for p in streaming._parquet_rows(broken)]


def test_csv_is_one_streaming_part(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text('response,ground_truth\n"a\nb",x\nc,y,z\nd,e\n', encoding="utf-8")
    part = {"kind": "csv", "suffix": ".csv"}
    assert list(ray_files.part_items(part, str(path), "rows.csv")) == list(
        streaming._csv_rows(path, "rows.csv"))
    assert [i.line for i in ray_files.part_items(part, str(path), "rows.csv")] == [3, 4, 5]


@pytest.mark.parametrize(("content", "streamed"), [
    (b"", False), (b"", True), (b"\xef\xbb\xbf \n\r\n\t\n", False), (b"\n \xc2\xa0\n", False),
    (b"\n\n", True),
])
def test_a_file_without_rows_named_as_a_local_run_names_it(
    tmp_path: Path, content: bytes, streamed: bool
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    _, items = read_in_ranges(path, 2)
    assert items == []
    with pytest.raises(InputValidationError) as caught:
        if streamed:
            list(streaming.stream_records(path))
        else:
            load_records(path)
    assert [ray_files._no_rows(path, "jsonl", streamed)] == caught.value.problems


def test_a_file_that_is_not_text_named_before_anything_is_read(tmp_path: Path) -> None:
    for name, raw in (("u16.jsonl", '{"a": 1}\n'.encode("utf-16")), ("z.jsonl", b"\x1f\x8b\x08rest")):
        path = tmp_path / name
        path.write_bytes(raw)
        with pytest.raises(InputValidationError) as ours:
            ray_files._kind(path, ".jsonl", streamed=False)
        with pytest.raises(InputValidationError) as local:
            load_records(path)
        assert ours.value.problems == local.value.problems
    array = tmp_path / "rows.json"
    array.write_text(' [{"response": "a"}]', encoding="utf-8")
    assert ray_files._kind(array, ".json", streamed=False) == "whole"
    spaced = tmp_path / "spaced.json"
    spaced.write_bytes(b"\xef\xbb\xbf" + b" \n" * 5000 + b'[{"response": "a"}]')
    assert ray_files._kind(spaced, ".json", streamed=False) == "whole"
    assert ray_files.parse_bytes(spaced.read_bytes(), str(spaced), ".json") == load_records(spaced)
    lines = tmp_path / "lines.json"
    lines.write_text('\n{"response": "a"}\n', encoding="utf-8")
    assert ray_files._kind(lines, ".json", streamed=False) == "jsonl"
    assert ray_files.parse_bytes(array.read_bytes(), str(array), ".json") == load_records(array)


def test_range_size_from_the_file_and_the_cluster() -> None:
    mib = 1 << 20
    assert ray_files.range_bytes(100 * mib, 2) == 100 * mib // 8
    assert ray_files.range_bytes(5 * mib, 2) == ray_files.MIN_RANGE_BYTES
    assert ray_files.range_bytes(100_000 * mib, 2) == ray_files.MAX_RANGE_BYTES
    assert ray_files.range_bytes(0, 0) == ray_files.MIN_RANGE_BYTES
