"""``evaluate(output_path=...)``'s files, written while the run goes.

:class:`RowsFile` listens to the run's store writes (the run's sink,
:class:`~touchstone.engine.run.sink.RunSink`, reports which rows' inputs and which (row, evaluator)
results are written), keeps one boolean per row and evaluator, and a cursor: the first row not yet
complete. About once a second (:data:`TICK_SECONDS`) the rows from the last written one up to the
cursor are rendered a page at a time and appended, in row order, to ``rows.jsonl`` (which grows in
place: a crash leaves whole lines of the rows finished so far) and to the SDK file's temporary file.
A small run's rows are rendered from the Outcomes and records it holds (what its result's rows are
rendered from); a large run holds none, its rows are read from the store, as its result's rows are
(:func:`~touchstone.engine.stored_rows.read_parts`). The metrics are known only at the end:
:meth:`RowsFile.finish` appends the remaining rows, the SDK file's ``metrics`` (then renames it into
place) and writes ``summary.json``.

The SDK's frame renders every row with what all rows hold (columns by first appearance, ints with a
gap as floats): rows written during the run are rendered with the schema of the rows written so far
(:class:`_SchemaSoFar`, gathered as :class:`~touchstone.engine.accumulate.RunAccumulator` gathers
it), by the same :func:`~touchstone.engine.sdk_frame.render.frame_row` as the result's rows. When
the finished run's schema differs from one used on the way (a later row failed, or brought a new
column), or rows a small run read from the store (a resume's earlier results) differ from its
result's, the files are written again whole from the result: the finished files are always exactly
what :meth:`~touchstone.engine.result.EvaluationResult.write` writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from touchstone._text import json_dumps
from touchstone.engine.result import _UMASK, RESULTS_FILE, EvaluationResult, _atomic, output_files
from touchstone.engine.sdk_frame.gather import FrameGatherer, FrameSchema
from touchstone.engine.sdk_frame.render import Outputs, frame_row
from touchstone.engine.sdk_frame.values import sdk_input
from touchstone.engine.stored_rows import PAGE_ROWS, RowParts, read_parts
from touchstone.errors import OutputWriteError, RunAbortedError, describe_os_error
from touchstone.store import Store

if TYPE_CHECKING:
    from touchstone.engine.run.session import RunSession

TICK_SECONDS = 1.0
"""How often the rows completed since the last write are appended."""
SCAN_ROWS = 65_536
"""Rows checked at a time when the cursor moves (so a tick costs what it advances, not the run)."""

class _SchemaSoFar:
    """The rows' schema over the first rows of the run (fed in order): the columns and their types
    as :class:`~touchstone.engine.accumulate.RunAccumulator` gathers them (the same
    :class:`~touchstone.engine.sdk_frame.gather.FrameGatherer`), without the metrics' values."""

    def __init__(self, n_rows: int, names: Sequence[str]) -> None:
        self.frame = FrameGatherer(n_rows, list(names), metrics=False)
        self.with_target = False
        self.count = 0

    def add(self, parts: RowParts) -> None:
        i, data, source, target, target_error, outputs = parts
        self.frame.add_row(i, sdk_input(data, source), target, target_error)
        if target is not None or target_error is not None:
            self.with_target = True
        for name, group in self.frame.outputs.items():
            out, failed = outputs.get((i, name), (None, True))
            if out is not None and not failed:  # a failed result adds no column (NaN, as missing)
                group.add(i, out)
        self.count += 1

    def schema(self) -> FrameSchema:
        """The schema of the rows fed so far, as if they were the whole run."""
        frame = self.frame
        for group in (frame.inputs, frame.targets, *frame.outputs.values()):
            group.finish()
        return frame.schema(self.count, with_target=self.with_target)


class _Parts:
    """What the rows to append are rendered from. A small run holds its Outcomes (and its records):
    its rows are taken from them, the same values its result's rows are rendered from; only a
    resume's earlier results (not in memory until the run ends) are read from the store. A large
    run holds nothing: its rows are in the store only, and read from there a page at a time, as its
    result's rows are (:class:`~touchstone.engine.stored_rows.StoredRows`)."""

    def __init__(self, runner: RunSession) -> None:
        self._store, self._run_id = runner.store, runner.ctx.run_id
        self._records = runner.source.records
        self._names = list(runner.evs)
        self._held = runner.scores if runner.keep and self._records is not None else None
        self._targets = runner.targets if runner.target is not None else None

    def read(self, start: int, stop: int) -> list[RowParts]:
        held, records = self._held, self._records
        if held is None or records is None:
            return read_parts(self._store, self._run_id, start, stop, records)
        outputs: dict[tuple[int, str], Outputs] = {}
        missing = False
        for i in range(start, stop):
            for name in self._names:
                got = held.get((i, name))
                if got is None:
                    missing = True
                else:
                    outputs[i, name] = (got[0], got[0].failed)
        if missing:  # a resume's earlier results
            stored = self._store.results.outputs_by_result(self._run_id, start, stop)
            outputs = {**stored, **outputs}
        targets = self._targets
        parts = []
        for i in range(start, stop):
            rec = records[i]
            target, error = (None, None) if targets is None else targets.get(i, (None, None))
            parts.append(RowParts(i, rec.data, rec.source, target, error, outputs))
        return parts


class RowsFile:
    """The output files of one run (``output_path`` as :meth:`EvaluationResult.write` reads it),
    written as rows complete. Use :meth:`during` around the run, then :meth:`finish` with its result
    (or nothing: a run that failed keeps ``rows.jsonl`` as far as it got)."""

    def __init__(self, output_path: str | os.PathLike[str]) -> None:
        self.path = Path(output_path)
        self.folder: Path | None = None
        self.sdk_path = self.path
        self.broken = False
        """A write failed during the run: :meth:`finish` writes the files from the result instead."""
        self._lock = threading.Lock()
        self._reports: list[tuple[str | None, list[int]]] = []
        self._rows_fh: IO[str] | None = None
        self._rows_tmp: Path | None = None
        self._sdk_fh: IO[str] | None = None
        self._sdk_tmp: Path | None = None
        self._used: list[FrameSchema] = []
        self._hash = hashlib.blake2b()
        self.done = 0
        """Rows written so far (the cursor)."""
        self._scan = 0
        self.during_run = 0
        """Rows written while the run went (the rest were written by :meth:`finish`)."""

    # ------------------------------------------------------------------ during the run
    @contextlib.asynccontextmanager
    async def during(self, runner: RunSession) -> AsyncIterator[None]:
        """Listen to ``runner``'s store writes (its sink's events) and append completed rows every
        :data:`TICK_SECONDS`."""
        self._start(runner.store, runner)
        runner.sink.subscribe(self)
        task = asyncio.create_task(self._every())
        try:
            yield
        except RunAbortedError:
            raise  # the result is still written (finish)
        except BaseException:
            self.abandon()
            raise
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            runner.sink.unsubscribe(self)

    def _start(self, store: Store, runner: RunSession) -> None:
        self._store, self._run_id, self.n = store, runner.ctx.run_id, runner.n
        self._names = list(runner.evs)
        self._parts = _Parts(runner)
        # A small run's result renders its rows from the Outcomes and records in memory, as the
        # rows appended here are, except a resume's earlier results and rows without records, read
        # from the store here: those are compared with the result's at the end.
        self._verify = bool(runner.keep) and (runner.resumed or runner.source.records is None)
        self._prefix = _SchemaSoFar(self.n, self._names)
        self._runner = runner
        self._masks: dict[str, np.ndarray] | None = None  # made on the first tick (runner.stored is known)
        self._inputs = np.zeros(self.n, dtype=bool)
        if runner.resumed:  # rows stored by the run resumed count as done
            for start in range(0, self.n, PAGE_ROWS * 5):
                for idx in store.results.stored_row_indices(self._run_id, start, start + PAGE_ROWS * 5):
                    if 0 <= idx < self.n:
                        self._inputs[idx] = True
        self.folder, self.sdk_path = output_files(self.path)  # OutputWriteError before anything is scored
        self._open_files()

    def written(self, evaluator: str | None, indices: list[int]) -> None:
        """The store wrote these rows' inputs (``evaluator`` None) or results (any thread)."""
        with self._lock:
            self._reports.append((evaluator, indices))

    async def _every(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                await self.tick()
            except Exception:  # a full disk, a lost folder: the files are written at the end instead
                self._break()
                return

    async def tick(self) -> None:
        """Append the rows completed since the last tick, a page at a time."""
        if self._masks is None:
            stored = self._runner.stored
            if not stored:  # the run has not started scoring
                return
            self._masks = {name: stored[name].copy() for name in self._names}
        with self._lock:
            reports, self._reports = self._reports, []
        for name, indices in reports:
            mask = self._inputs if name is None else self._masks.get(name)
            if mask is not None and indices:
                mask[np.asarray(indices, dtype=np.int64)] = True
        stop = self._complete()
        while self.done < stop:
            end = min(stop, self.done + PAGE_ROWS)
            page = self._parts.read(self.done, end)
            for parts in page:
                self._prefix.add(parts)
            schema = self._prefix.schema()
            self._emit([frame_row(schema, *parts) for parts in page], schema)
            await asyncio.sleep(0)  # the loop goes on between pages

    def _complete(self) -> int:
        """The first row from the cursor on whose inputs or some result are not stored yet."""
        pos = self._scan
        while pos < self.n:
            end = min(self.n, pos + SCAN_ROWS)
            ok = self._inputs[pos:end].copy()
            for mask in (self._masks or {}).values():
                ok &= mask[pos:end]
            missing = np.flatnonzero(~ok)
            if len(missing):
                pos += int(missing[0])
                break
            pos = end
        self._scan = pos
        return pos

    # ------------------------------------------------------------------ files
    def _open_files(self) -> None:
        if self.folder is not None:
            _remove_stale(self.folder, "rows.jsonl")
            self._rows_tmp, self._rows_fh = _temporary(self.folder / "rows.jsonl")
        _remove_stale(self.sdk_path.parent, self.sdk_path.name)
        self._sdk_tmp, self._sdk_fh = _temporary(self.sdk_path)
        self._sdk_fh.write('{"rows": [')

    def _emit(
        self, rows: Sequence[dict[str, Any]], schema: FrameSchema | None, *, publish: bool = True
    ) -> None:
        """Append rows (rendered) to both files; ``publish``: a new ``rows.jsonl`` takes the old one's
        place at its first rows (at the end, it does once whole)."""
        if not rows:
            return
        lines = [json_dumps(row, default=str) for row in rows]  # C1/bidi as escapes: safe to cat
        text = "\n".join(lines) + "\n"
        if self._rows_fh is not None:
            self._rows_fh.write(text)
            self._rows_fh.flush()  # whole lines reach the file: a crash keeps them
            if publish and self._rows_tmp is not None and self.folder is not None:  # the first rows
                os.replace(self._rows_tmp, self.folder / "rows.jsonl")
                self._rows_tmp = None
        assert self._sdk_fh is not None
        self._sdk_fh.write((", " if self.done else "") + ", ".join(lines))
        if self._verify:
            self._hash.update(text.encode())
        if schema is not None and (not self._used or self._used[-1] != schema):
            self._used.append(schema)
        self.done += len(rows)

    def _break(self) -> None:
        self.broken = True
        self._close(keep_rows=True)

    def abandon(self) -> None:
        """The run failed: ``rows.jsonl`` keeps the rows written so far, the SDK file is not made."""
        self._close(keep_rows=True)

    def _close(self, *, keep_rows: bool) -> None:
        for fh in (self._rows_fh, self._sdk_fh):
            if fh is not None:
                with contextlib.suppress(OSError):
                    fh.close()
        self._rows_fh = self._sdk_fh = None
        for tmp in (self._rows_tmp, self._sdk_tmp):
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
        self._rows_tmp = self._sdk_tmp = None

    # ------------------------------------------------------------------ the end
    def finish(self, result: EvaluationResult) -> Path:
        """Complete the files from the finished run's ``result``; returns the SDK file's path. An
        :class:`~touchstone.errors.OutputWriteError` carries the result (``exc.result``): the run is
        stored, only its files are missing."""
        self.during_run = self.done
        try:
            if self.broken or self._sdk_fh is None:
                self._close(keep_rows=True)
                return result.write(self.path)
            try:
                return self._finish(result)
            except OSError as exc:
                self._close(keep_rows=True)
                raise OutputWriteError(f"cannot write {self.sdk_path}: {describe_os_error(exc)}") from None
        except OutputWriteError as exc:
            exc.result = result  # type: ignore[attr-defined]
            raise

    def _finish(self, result: EvaluationResult) -> Path:
        rows = result.rows
        tail = self.done
        for start in range(tail, self.n, PAGE_ROWS):  # the rest's columns: the whole run's schema
            for parts in self._parts.read(start, min(self.n, start + PAGE_ROWS)):
                self._prefix.add(parts)
        final = self._prefix.schema()
        if any(schema != final for schema in self._used) or not self._same_text(rows):
            self._restart()
        for start in range(self.done, len(rows), PAGE_ROWS):
            self._emit(rows[start : start + PAGE_ROWS], None, publish=False)
        assert self._sdk_fh is not None and self._sdk_tmp is not None
        self._sdk_fh.write('], "metrics": ' + json_dumps(result.metrics, default=str))
        self._sdk_fh.write(', "studio_url": ' + json_dumps(result.get("studio_url"), default=str) + "}")
        _seal(self._sdk_fh)
        self._sdk_fh = None
        os.replace(self._sdk_tmp, self.sdk_path)
        self._sdk_tmp = None
        if self.folder is None:
            return self.sdk_path
        assert self._rows_fh is not None
        _seal(self._rows_fh)
        self._rows_fh = None
        if self._rows_tmp is not None:
            os.replace(self._rows_tmp, self.folder / "rows.jsonl")
            self._rows_tmp = None
        with _atomic(self.folder / "summary.json") as fh:
            fh.write(json_dumps(result.summary_document(), indent=2, default=str))
        return self.folder / RESULTS_FILE

    def _same_text(self, rows: Sequence[dict[str, Any]]) -> bool:
        """The rows written give the text of the result's rows (see :meth:`_start`: compared only
        where some were read from the store on a small run)."""
        if not self._verify or not isinstance(rows, list) or not self.done:
            return True
        check = hashlib.blake2b()
        for start in range(0, self.done, PAGE_ROWS):
            lines = [json_dumps(row, default=str) for row in rows[start : min(self.done, start + PAGE_ROWS)]]
            check.update(("\n".join(lines) + "\n").encode())
        return check.digest() == self._hash.digest()

    def _restart(self) -> None:
        """Write both files again from the first row (the old ``rows.jsonl`` stays until the new one
        is whole)."""
        assert self._sdk_fh is not None
        self._sdk_fh.seek(0)
        self._sdk_fh.truncate()
        self._sdk_fh.write('{"rows": [')
        if self.folder is not None:
            if self._rows_fh is not None:
                self._rows_fh.close()
            if self._rows_tmp is not None:
                self._rows_tmp.unlink()
            self._rows_tmp, self._rows_fh = _temporary(self.folder / "rows.jsonl")
        self.done = 0
        self._verify = False
        self._used = []


def _temporary(path: Path) -> tuple[Path, IO[str]]:
    """A new file beside ``path`` (named after it and this process), open for writing."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    os.chmod(name, 0o666 & ~_UMASK)  # as open() would have made it (mkstemp makes it private)
    return Path(name), os.fdopen(fd, "w", encoding="utf-8")


def _seal(fh: IO[str]) -> None:
    fh.flush()
    os.fsync(fh.fileno())
    fh.close()


def _remove_stale(folder: Path, name: str) -> None:
    """Temporary files of ``name`` left by a process that no longer runs (a run killed mid-way)."""
    with contextlib.suppress(OSError):
        for tmp in folder.glob(f".{name}.*.tmp"):
            parts = tmp.name[len(name) + 2 :].split(".")  # PID, random part, "tmp"
            pid = parts[0]
            if len(parts) == 3 and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    tmp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True


def open_rows_file(output_path: str | os.PathLike[str] | None) -> RowsFile | None:
    """A :class:`RowsFile` for ``evaluate(output_path=...)``, or None without an output path
    (nothing is watched then)."""
    return None if output_path is None else RowsFile(output_path)
