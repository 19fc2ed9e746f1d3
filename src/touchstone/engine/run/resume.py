"""Resuming a run: which earlier run may be resumed with this call's data and metrics, which of its
stored results stand, and those results read back as Outcomes a page at a time.

A run's configuration keeps two hashes (:func:`fingerprint`): of its rows and of its evaluator
setup; a resume over other data or other metrics is refused before anything is scored. Stored
failures of the moment (a judge outage, a run stopped early) are scored again by default
(:data:`RETRIED_BY_DEFAULT`, ``retry_failed``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import Evaluator
from touchstone.scores import METRIC, STATUS, CompactOutcome, Outcome, Status
from touchstone.store import Store

STORE_PAGE = 5000
"""Rows read from the store at a time (a resume's stored results, the corpus figures)."""

RETRIED_BY_DEFAULT = frozenset({"judge_call", "aborted", "transient", "rate_limit"})
"""Error kinds of stored failed scores that a resumed run scores again by default: failures of the
moment (a judge outage, a run stopped early), not of the row."""

StoredOutcome = tuple[Outcome, "dict[str, Any] | None"]
"""A stored result as the run holds it: the Outcome and the usage spent on it."""


def retry_kinds(choice: Any) -> frozenset[str]:
    """Which stored failures a resume scores again: ``None``/``"transient"`` the failures of the moment
    (:data:`RETRIED_BY_DEFAULT`), ``True``/``"all"`` every failed score, ``False``/``"none"`` none."""
    if choice is None or choice == "transient":
        return RETRIED_BY_DEFAULT
    if choice is True or choice == "all":
        return frozenset({"*"})
    if choice is False or choice == "none":
        return frozenset()
    raise ConfigurationError(f"retry_failed must be 'transient', 'all' or 'none', got {choice!r}")


def fingerprint(digest: str, config: Mapping[str, Any]) -> dict[str, str]:
    """Hashes of the rows' data (``digest``) and of the evaluator configuration (metrics, their
    options, column mapping), kept in the run's config: a resume over other data or other metrics is
    refused."""
    setup = {key: config.get(key) for key in ("evaluators", "evaluator_config", "target")}
    evaluators = hashlib.sha256(json.dumps(setup, sort_keys=True, default=_opaque).encode())
    return {"data": digest, "evaluators": evaluators.hexdigest()}


def _opaque(value: Any) -> str:
    """An object JSON cannot hold, by its type only (its repr may hold a memory address)."""
    return f"<{type(value).__qualname__}>"


def check_resume(run_store: Store, resume: str, config: Mapping[str, Any]) -> None:
    """Refuse to resume a run that is missing, or was over other rows, data or metrics."""
    info = run_store.get_run(resume)
    if info is None:
        raise ConfigurationError(f"no run {resume!r} in the store {run_store.path}")
    n_rows = config["n_rows"]
    if info.config.get("n_rows") != n_rows:
        raise ConfigurationError(
            f"run {resume} was over {info.config.get('n_rows')} rows; this data has {n_rows}"
        )
    stored = info.config.get("fingerprint")
    if not isinstance(stored, dict):
        return  # stored by a version without fingerprints: the row count is all there is to check
    ours = config["fingerprint"]
    if stored.get("data") != ours["data"]:
        raise ConfigurationError(
            f"run {resume} was scored on other data than {config.get('data')} (same {n_rows} rows, "
            "different contents): resuming would mix scores of different inputs; start a new run instead"
        )
    if stored.get("evaluators") != ours["evaluators"]:
        raise ConfigurationError(
            f"run {resume} was scored with another evaluator configuration (metrics, options or column "
            "mapping): resume it with its own settings, or start a new run"
        )


def standing_results(
    store: Store, run_id: str, n_rows: int, names: list[str], retry: frozenset[str]
) -> dict[str, np.ndarray]:
    """Per evaluator, the rows whose stored result a resume keeps (those whose failure is to be
    scored again, by ``retry``'s error kinds, do not)."""
    masks = {name: np.zeros(n_rows, dtype=bool) for name in names}
    results = store.results
    for start in range(0, n_rows, STORE_PAGE):
        for name, indices in results.scored_rows(run_id, start, start + STORE_PAGE).items():
            mask = masks.get(name)
            if mask is not None:
                rows = np.asarray(indices, dtype=np.int64)
                mask[rows[(rows >= 0) & (rows < n_rows)]] = True
    if retry:
        everything = "*" in retry
        for failure in results.failed_scores(run_id):
            idx, name = failure.idx, failure.evaluator
            if name in masks and 0 <= idx < n_rows and (everything or (failure.error_kind or "") in retry):
                masks[name][idx] = False
    return masks


def stored_page(
    store: Store, run_id: str, evs: Mapping[str, Evaluator], start: int, stop: int
) -> dict[tuple[int, str], StoredOutcome]:
    """The stored Outcomes of rows ``start`` to ``stop`` (exclusive): the typed score lines with the
    flat outputs beside them (rows stored by a version without typed lines are read through
    :meth:`Evaluator.as_outcome`)."""
    results = store.results
    typed = {name: results.score_lines(run_id, name, start, stop) for name in evs}
    out: dict[tuple[int, str], StoredOutcome] = {}
    ok = Status.OK.value
    for result in results.results(run_id, start, stop):
        idx, name, outputs, usage = result.idx, result.evaluator, result.outputs, result.usage
        ev = evs.get(name)
        if ev is None:
            continue
        lines = typed[name].get(idx)
        if lines is None:
            out[idx, name] = (ev.as_outcome(outputs), usage)
            continue
        main = ev.info.key
        lines.sort(key=lambda line: line[METRIC] != main)  # the main score first
        error = outputs.get(f"{ev.info.prefix}_error")
        failed = any(line[STATUS] != ok for line in lines)
        message = None if error is None else str(error)
        out[idx, name] = (CompactOutcome(outputs, lines, failed, message), usage)
    return out
