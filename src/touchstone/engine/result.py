"""The result of ``evaluate()``: a dict shaped like ``azure-ai-evaluation``'s, with more on top."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from touchstone._text import json_dumps
from touchstone.errors import OutputWriteError, describe_os_error
from touchstone.evaluators.base import Evaluator
from touchstone.evaluators.custom import CallableEvaluator

RESULTS_FILE = "evaluation_results.json"
"""The file the compatible SDK writes into an output folder."""


class EvaluationResult(dict[str, Any]):
    """``result["rows"]``, ``result["metrics"]`` and ``result["studio_url"]`` as in the compatible
    SDK; plus ``summary`` (per metric key: mean, n, n_failed, 95% CI, pass rate), ``run`` (id, name,
    times, status, config, package version) and :meth:`to_pandas`.

    ``rows`` is a list, or on a large run a read-only sequence read from the run store page by page
    (:class:`~touchstone.engine.stored_rows.StoredRows`: indexing, slices, iteration and ``==`` as a
    list; ``list(result.rows)`` makes one). ``n_failed``: the count when it is known without reading
    the rows."""

    def __init__(
        self,
        rows: Sequence[dict[str, Any]],
        metrics: dict[str, float],
        summary: dict[str, dict[str, Any]],
        run: dict[str, Any],
        *,
        n_failed: int | None = None,
    ) -> None:
        super().__init__(rows=rows, metrics=metrics, studio_url=None)
        self.summary = summary
        self.run = run
        self._n_failed = n_failed

    @property
    def rows(self) -> Sequence[dict[str, Any]]:
        return self["rows"]  # type: ignore[no-any-return,unused-ignore]

    @property
    def metrics(self) -> dict[str, float]:
        return self["metrics"]  # type: ignore[no-any-return,unused-ignore]

    @property
    def n_failed(self) -> int:
        """Scores that could not be obtained, over all evaluators (rows' ``*_error`` messages)."""
        if self._n_failed is not None:
            return self._n_failed
        return sum(
            1 for row in self.rows for key, value in row.items()
            if key.endswith("_error") and value and isinstance(value, str)
        )

    def to_pandas(self) -> Any:
        import pandas as pd

        rows = self.rows
        return pd.DataFrame(rows if isinstance(rows, list) else list(rows))

    def summary_document(self) -> dict[str, Any]:
        return {"metrics": self.metrics, "summary": self.summary, "run": self.run}

    def sdk_document(self) -> dict[str, Any]:
        """What the compatible SDK saves: ``rows``, ``metrics`` and ``studio_url``."""
        return {"rows": self.rows, "metrics": self.metrics, "studio_url": self.get("studio_url")}

    def write(self, output_path: str | os.PathLike[str]) -> Path:
        """Save the result; returns the SDK-format file written.

        As the compatible SDK: a folder that exists gets ``evaluation_results.json``; a path with a
        file suffix (``results.json``) or an existing file is that file. touchstone's own files go
        beside ``evaluation_results.json`` in a folder: ``rows.jsonl`` (exactly ``result["rows"]``)
        and ``summary.json`` (metrics, summary, run). A path that does not exist and has no suffix is
        made a folder (the command line's ``--out``)."""
        folder, sdk_path = output_files(Path(output_path))
        self._dump_sdk(sdk_path)
        if folder is None:
            return sdk_path
        path = folder
        with _atomic(path / "rows.jsonl") as fh:
            for row in self.rows:
                fh.write(json_dumps(row, default=str) + "\n")  # C1/bidi as escapes: safe to cat
        with _atomic(path / "summary.json") as fh:
            fh.write(json_dumps(self.summary_document(), indent=2, default=str))
        return path / RESULTS_FILE

    def _dump_sdk(self, path: Path) -> None:
        """:meth:`sdk_document` as one JSON line, the rows written one by one when they are not a
        list (the same text ``json.dumps`` gives for the whole document)."""
        if isinstance(self.rows, list):
            _dump(self.sdk_document(), path)
            return
        with _atomic(path) as fh:
            fh.write('{"rows": [')
            for n, row in enumerate(self.rows):
                fh.write((", " if n else "") + json_dumps(row, default=str))
            fh.write('], "metrics": ' + json_dumps(self.metrics, default=str))
            fh.write(', "studio_url": ' + json_dumps(self.get("studio_url"), default=str) + "}")


def output_files(path: Path) -> tuple[Path | None, Path]:
    """Where :meth:`EvaluationResult.write` puts its files: ``(folder, SDK file)``, the folder None
    when ``path`` names the SDK file itself; the folder (or the file's parent) is made.
    :class:`~touchstone.errors.OutputWriteError` when it cannot be."""
    if not path.is_dir() and (path.suffix or path.exists()):
        if path.parent != Path("."):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputWriteError(f"cannot create {path.parent}: {describe_os_error(exc)}") from None
        return None, path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputWriteError(f"cannot create the output folder {path}: {describe_os_error(exc)}") from None
    return path, path / RESULTS_FILE


def _dump(doc: Mapping[str, Any], path: Path) -> None:
    # One line with NaN written as NaN, as the SDK's json.dump gives it; values JSON cannot hold
    # (a date a target returned) as their text rather than a failure after the run.
    with _atomic(path) as fh:
        fh.write(json_dumps(doc, default=str))


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


@contextmanager
def _atomic(path: Path) -> Iterator[TextIO]:
    """Write ``path`` whole or not at all: into a temporary file beside it, renamed over it once
    complete. A full disk or a lost permission leaves the old file (or none), never a truncated one,
    and raises :class:`~touchstone.errors.OutputWriteError` naming the file."""
    tmp: Path | None = None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        tmp = Path(name)
        os.chmod(tmp, 0o666 & ~_UMASK)  # as open() would have made it (mkstemp makes it private)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise OutputWriteError(f"cannot write {path}: {describe_os_error(exc)}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def own_aggregators(evs: Mapping[str, Evaluator]) -> dict[str, Callable[[Any], Any]]:
    """The ``__aggregate__`` methods of the evaluators that define one (a user's class given to
    ``evaluate()``), whose dict the SDK adds to ``metrics`` as ``<name>.<key>``."""
    found: dict[str, Callable[[Any], Any]] = {}
    for name, ev in evs.items():
        owner = ev.fn if isinstance(ev, CallableEvaluator) else ev
        aggregate = getattr(owner, "__aggregate__", None)
        if callable(aggregate):
            found[name] = aggregate
    return found
