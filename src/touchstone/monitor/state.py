"""What a monitor keeps between restarts, in its state directory (one per monitor name):

- ``offsets.json``: how far each tailed JSONL file has been read;
- ``pending.jsonl``: the kept interactions of windows not yet evaluated (so a restart loses none);
- ``alerts.jsonl``: every alert raised.

Interactions are appended to ``pending.jsonl`` before the offsets that produced them are saved, and
the file is rewritten (atomically) without a window's interactions once the window is stored: a
crash can at worst read a line again, and the window's dedup by id drops the copy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from touchstone.monitor.interactions import Interaction
from touchstone.monitor.sources.jsonl import FileOffset


class MonitorState:
    """The files of one monitor's state directory."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.offsets_path = self.directory / "offsets.json"
        self.pending_path = self.directory / "pending.jsonl"
        self.alerts_path = self.directory / "alerts.jsonl"

    def load_offsets(self) -> dict[str, FileOffset]:
        try:
            raw = json.loads(self.offsets_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return {name: FileOffset.from_json(value) for name, value in raw.items()}

    def save_offsets(self, offsets: dict[str, FileOffset]) -> None:
        _write_atomic(self.offsets_path, json.dumps({k: v.as_json() for k, v in offsets.items()}, indent=1))

    def append_pending(self, interactions: Iterable[Interaction]) -> None:
        lines = "".join(_encode(i) for i in interactions)
        if lines:
            with self.pending_path.open("a", encoding="utf-8") as fh:
                fh.write(lines)

    def rewrite_pending(self, interactions: Iterable[Interaction]) -> None:
        _write_atomic(self.pending_path, "".join(_encode(i) for i in interactions))

    def load_pending(self) -> Iterator[Interaction]:
        try:
            fh = self.pending_path.open(encoding="utf-8")
        except FileNotFoundError:
            return
        with fh:
            for line in fh:
                try:
                    raw: dict[str, Any] = json.loads(line)
                    yield Interaction(str(raw["d"]["id"]), str(raw["k"]), float(raw["t"]), raw["d"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a crash: its source is read again


def _encode(interaction: Interaction) -> str:
    record = {"k": interaction.key, "t": interaction.timestamp, "d": interaction.data}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
