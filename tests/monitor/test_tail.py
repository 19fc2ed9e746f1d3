"""Tailing a directory: appended lines and new files are read exactly once, across restarts (offsets
and pending interactions in the state directory), a half-written line waits, a truncated or replaced
file is read from its start."""

from __future__ import annotations

import json
import os
from pathlib import Path

from touchstone.engine.planning import plan_evaluation
from touchstone.monitor.service import Monitor, MonitorConfig
from touchstone.monitor.sources.jsonl import DirectoryTail
from touchstone.monitor.state import MonitorState
from touchstone.store import RunStore


def line(i: int, hour: int = 10) -> str:
    return (
        json.dumps(
            {
                "id": f"i{i}",
                "timestamp": f"2025-05-01T{hour}:00:{i % 60:02d}Z",
                "response": "a b",
                "ground_truth": "a b",
            }
        )
        + "\n"
    )


def start(tmp_path: Path) -> tuple[Monitor, DirectoryTail]:
    """A monitor as a fresh process would build it from the state directory."""
    state = MonitorState(tmp_path / "state")
    plan = plan_evaluation(["f1_score"], {}, {})
    monitor = Monitor(MonitorConfig("t", 3600), plan, RunStore(tmp_path / "runs.db"), state)
    return monitor, DirectoryTail(tmp_path / "src", state.load_offsets())


def ids(monitor: Monitor) -> list[str]:
    return sorted(i for w in monitor.windows.values() for i in w)


def test_lines_read_exactly_once_across_restarts(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text(line(0) + line(1))
    (src / "ignored.txt").write_text(line(99))
    monitor, tail = start(tmp_path)
    assert monitor.tail(tail) == 2
    assert monitor.tail(tail) == 0  # nothing new

    with (src / "a.jsonl").open("a") as fh:  # appended: one whole line and half of the next
        fh.write(line(2) + line(3)[:20])
    (src / "b.jsonl").write_text(line(4))  # a new file
    assert monitor.tail(tail) == 2
    assert ids(monitor) == ["i0", "i1", "i2", "i4"]

    # restart: what was read is pending (not read again), the half line is completed and read once
    monitor, tail = start(tmp_path)
    assert ids(monitor) == ["i0", "i1", "i2", "i4"] and monitor.counts["restored"] == 4
    with (src / "a.jsonl").open("a") as fh:
        fh.write(line(3)[20:] + line(5))
    assert monitor.tail(tail) == 2
    assert monitor.counts["received"] == 2 and monitor.counts["duplicate"] == 0
    assert ids(monitor) == ["i0", "i1", "i2", "i3", "i4", "i5"]

    # the window is evaluated: pending is emptied, a restart reads nothing again and keeps nothing
    (report,) = monitor.evaluate_due(everything=True)
    assert report.n == 6
    monitor, tail = start(tmp_path)
    assert ids(monitor) == [] and monitor.tail(tail) == 0
    # a late line for the stored window is counted, not evaluated twice
    with (src / "b.jsonl").open("a") as fh:
        fh.write(line(6))
    assert monitor.tail(tail) == 0 and monitor.counts["late"] == 1
    assert monitor.evaluate_due(everything=True) == []


def test_truncated_or_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text(line(0) + line(1) + line(2))
    monitor, tail = start(tmp_path)
    assert monitor.tail(tail) == 3
    (src / "a.jsonl").write_text(line(7))  # truncated in place (shorter than the offset)
    assert monitor.tail(tail) == 1
    replacement = src / "new.tmp"
    replacement.write_text(line(8) + line(9) + line(10) + line(11))
    os.replace(replacement, src / "a.jsonl")  # rotated: another inode
    assert monitor.tail(tail) == 4
    assert ids(monitor) == ["i0", "i1", "i10", "i11", "i2", "i7", "i8", "i9"]


def test_a_duplicate_id_in_a_window_is_kept_once(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text(line(0) + line(0) + line(1, hour=11) + line(1, hour=12))
    monitor, tail = start(tmp_path)
    assert monitor.tail(tail) == 3  # the same id in two windows is two interactions
    assert monitor.counts["duplicate"] == 1


def test_windows_close_after_their_end_plus_grace(tmp_path: Path) -> None:
    now = [0.0]
    state = MonitorState(tmp_path / "state")
    config = MonitorConfig("t", 3600, grace=300)
    monitor = Monitor(
        config,
        plan_evaluation(["f1_score"], {}, {}),
        RunStore(tmp_path / "runs.db"),
        state,
        clock=lambda: now[0],
    )
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.jsonl").write_text(line(1, hour=10) + line(2, hour=11))
    monitor.tail(DirectoryTail(src))
    ten = 1746093600  # 2025-05-01T10:00:00Z
    now[0] = ten + 3600 + 299  # the 10:00 window ended, its grace has not passed
    assert monitor.due() == [] and monitor.evaluate_due() == []
    now[0] = ten + 3600 + 300
    assert monitor.due() == [ten]
    (report,) = monitor.evaluate_due()
    assert report.start == ten and list(monitor.windows) == [ten + 3600]
    assert monitor.due(everything=True) == [ten + 3600]
