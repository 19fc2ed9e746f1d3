"""A directory of JSONL files, tailed: new lines of existing files and lines of new files.

Offsets are per file (name, inode, byte offset, lines read) and are handed back to the caller, which
saves them only after it has kept what was read, so that a restart reads each complete line once.
A line still being written (no newline yet) is left for the next poll; a file that shrank (truncated
in place) or was replaced (another inode) is read again from its start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_READ = 64 * 1024 * 1024
"""The most bytes read from one file per poll (the rest waits for the next poll)."""


@dataclass
class FileOffset:
    """How far a file has been read."""

    inode: int
    offset: int
    lines: int

    def as_json(self) -> dict[str, int]:
        return {"inode": self.inode, "offset": self.offset, "lines": self.lines}

    @classmethod
    def from_json(cls, value: Any) -> FileOffset:
        return cls(int(value["inode"]), int(value["offset"]), int(value["lines"]))


@dataclass(frozen=True)
class Line:
    """One complete line read: its file, its 1-based line number, its bytes (without the newline)."""

    source: str
    number: int
    text: bytes


class DirectoryTail:
    """Reads the ``*.jsonl`` files directly in ``directory`` from where the offsets say."""

    def __init__(
        self, directory: str | os.PathLike[str], offsets: dict[str, FileOffset] | None = None
    ) -> None:
        self.directory = Path(directory)
        self.offsets: dict[str, FileOffset] = dict(offsets or {})

    def files(self) -> list[Path]:
        return sorted(p for p in self.directory.glob("*.jsonl") if p.is_file())

    def poll(self) -> tuple[list[Line], dict[str, FileOffset]]:
        """The complete lines written since the offsets, and the offsets after them (not yet adopted:
        call :meth:`commit` with them once the lines are kept)."""
        lines: list[Line] = []
        after = dict(self.offsets)
        for path in self.files():
            read = self._read(path, self.offsets.get(path.name))
            if read is None:
                continue
            new_lines, offset = read
            lines.extend(new_lines)
            after[path.name] = offset
        return lines, after

    def commit(self, offsets: dict[str, FileOffset]) -> None:
        self.offsets = dict(offsets)

    def _read(self, path: Path, known: FileOffset | None) -> tuple[list[Line], FileOffset] | None:
        try:
            st = path.stat()
        except FileNotFoundError:  # removed between the listing and now
            return None
        start = (
            known if known is not None and known.inode == st.st_ino and known.offset <= st.st_size else None
        )
        offset = (
            FileOffset(st.st_ino, 0, 0) if start is None else FileOffset(st.st_ino, start.offset, start.lines)
        )
        if st.st_size == offset.offset:
            return ([], offset) if start is None else None
        with path.open("rb") as fh:
            fh.seek(offset.offset)
            chunk = fh.read(MAX_READ)
        end = chunk.rfind(b"\n")
        if end < 0:
            return [], offset
        lines = list(_split(path.name, chunk[:end], offset.lines))
        return lines, FileOffset(
            st.st_ino, offset.offset + end + 1, offset.lines + chunk.count(b"\n", 0, end + 1)
        )


def _split(source: str, block: bytes, lines_before: int) -> Iterator[Line]:
    for number, text in enumerate(block.split(b"\n"), start=lines_before + 1):
        if text.strip():
            yield Line(source, number, text)
