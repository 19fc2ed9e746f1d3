"""The one guard every writer of results goes through before any work is done: an output never
replaces one of the run's inputs, a file is never expected where a folder is (or the other way
round), and a missing parent folder is said at once, not after judge calls were paid for.

Commands call :func:`check_output_file` or :func:`check_output_folder` with their inputs while
they validate options; a refusal is an :class:`~touchstone.errors.InputValidationError` naming the
option (exit status 2 on the command line)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from touchstone.errors import InputValidationError

RUN_FILES = ("rows.jsonl", "summary.json", "evaluation_results.json")
"""What a run writes into its output folder."""

PathLike = str | os.PathLike[str]


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links and ``..``), existing or not."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.expanduser().resolve(strict=False) == b.expanduser().resolve(strict=False)
    except (OSError, RuntimeError):  # a link loop or an unreadable folder: compare the names as given
        return os.path.abspath(a) == os.path.abspath(b)


def _input_paths(inputs: Iterable[PathLike | None]) -> list[Path]:
    paths: list[Path] = []
    for item in inputs:
        if item is None:
            continue
        text = os.fspath(item)
        if "://" in text:  # a URL or a database, not a file that could be overwritten here
            continue
        paths.append(Path(text))
    return paths


def _file_above(path: Path) -> Path | None:
    """The first ancestor of ``path`` that exists and is not a folder, if any."""
    for place in path.parents:
        if place.exists():
            return None if place.is_dir() else place
    return None


def check_output_file(path: PathLike, option: str, inputs: Iterable[PathLike | None] = ()) -> Path:
    """``path`` as a file to write: not a folder, not under a file, and not one of ``inputs``."""
    out = Path(os.fspath(path))
    if out.is_dir():
        raise InputValidationError(f"{option} {out} is a folder; expected a file to write")
    blocker = _file_above(out)
    if blocker is not None:
        raise InputValidationError(f"{option} {out} is under {blocker}, which is a file, not a folder")
    for source in _input_paths(inputs):
        if _same(out, source):
            raise InputValidationError(
                f"{option} {out} is the input {source}: writing there would replace it; choose another file"
            )
    return out


def check_output_folder(
    path: PathLike, option: str, inputs: Iterable[PathLike | None] = (), files: Sequence[str] = RUN_FILES
) -> Path:
    """``path`` as a folder to write ``files`` into (made when missing): not a file, not under one,
    and none of the files it will hold is one of ``inputs``."""
    out = Path(os.fspath(path))
    if out.exists() and not out.is_dir():
        raise InputValidationError(f"{option} {out} is a file; expected a folder for {', '.join(files)} "
                                   "(made when missing)")
    blocker = _file_above(out)
    if blocker is not None:
        raise InputValidationError(f"{option} {out} is under {blocker}, which is a file, not a folder")
    sources = _input_paths(inputs)
    for name in files:
        for source in sources:
            if _same(out / name, source):
                raise InputValidationError(
                    f"{option} {out} would replace the input {source} with the run's {name}; "
                    "choose another folder"
                )
    return out
