"""The monitor: interactions in (validated, sampled, put in their window), windows evaluated by
``evaluate()`` and stored as runs, alerts computed and sent.

One :class:`Monitor` is shared by the HTTP server's threads and the loop that tails files and
closes windows; its state changes under one lock, while a window is evaluated outside it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from touchstone.monitor.alerts import WELCH, Alert, regression_p_value, threshold_breached
from touchstone.monitor.interactions import Interaction, InteractionError, RowChecker, parse_interaction
from touchstone.monitor.sampling import keep
from touchstone.monitor.sinks import AlertSink
from touchstone.monitor.sources.jsonl import DirectoryTail, Line
from touchstone.monitor.sources.otlp import span_row
from touchstone.monitor.state import MonitorState
from touchstone.monitor.store import row_scores, run_name, stored_windows
from touchstone.monitor.windows import iso, window_start

log = logging.getLogger("touchstone.monitor")
LOGGED_REJECTIONS = 50
"""Rejected interactions logged one by one; after that only counted (a flood must not fill the log)."""


@dataclass
class MonitorConfig:
    """A monitor's settings: its ``name`` (the runs are ``monitor:<name>:<start>``), the window width
    in seconds, the sampling rate, thresholds on window means (by metric name), the baseline (earlier
    windows a window is tested against; 0: no regression test), the test's ``alpha``, ``grace``
    (seconds after a window's end before it is evaluated, for late arrivals) and ``min_rows`` (rows
    each side needs before the regression test is run)."""

    name: str
    window: int
    sample_rate: float = 1.0
    thresholds: dict[str, float] = field(default_factory=dict)
    baseline: int = 0
    alpha: float = 0.01
    grace: int = 0
    min_rows: int = 5


REPORTED_REJECTIONS = 100
"""At most this many rejections of one request are listed in the answer to its sender."""

_REJECTIONS: ContextVar[list[dict[str, str]] | None] = ContextVar("touchstone_rejections", default=None)


@dataclass
class WindowReport:
    """What evaluating one window produced."""

    start: int
    end: int
    run_id: str
    n: int
    summary: dict[str, Any]
    alerts: list[Alert]
    metrics: list[tuple[str, str]] = field(default_factory=list)
    """``(evaluator, metric key)`` of each evaluator's main score."""


class Monitor:
    """Ingests interactions and evaluates their windows with the evaluators of ``plan`` (an
    :class:`~touchstone.engine.planning.EvaluationPlan`), storing each window in ``store``."""

    def __init__(
        self,
        config: MonitorConfig,
        plan: Any,
        store: Any,
        state: MonitorState,
        sinks: Sequence[AlertSink] = (),
        *,
        exporter: Callable[[WindowReport, list[dict[str, Any]]], None] | None = None,
        clock: Callable[[], float] = time.time,
        validate_inputs: bool = True,
    ) -> None:
        self.config, self.plan, self.store, self.state = config, plan, store, state
        self.sinks = list(sinks)
        self.exporter = exporter
        self.clock = clock
        self.checker = RowChecker(plan.evaluators, plan.evaluator_config) if validate_inputs else None
        self.counts: Counter[str] = Counter()
        self.windows: dict[int, dict[str, Interaction]] = {}
        self.done = {w.start for w in stored_windows(store, config.name)}
        self.failed_windows = 0
        self._lock = threading.Lock()
        self._evaluating = threading.Lock()
        for interaction in state.load_pending():
            self._place(interaction)
        self.counts["restored"] = sum(len(w) for w in self.windows.values())

    # --- ingestion ------------------------------------------------------------------------------

    def reject(self, where: str, why: str) -> None:
        """Count (and, for the first ones, log) an interaction that cannot be monitored."""
        self.counts["invalid"] += 1
        told = _REJECTIONS.get()
        if told is not None and len(told) < REPORTED_REJECTIONS:  # the sender of this request is told why
            told.append({"where": where, "reason": why})
        if self.counts["invalid"] <= LOGGED_REJECTIONS:
            log.warning("rejected interaction (%s): %s", where, why)
        elif self.counts["invalid"] == LOGGED_REJECTIONS + 1:
            log.warning("more rejected interactions: counted, no longer logged one by one")

    def accept(self, obj: Any, where: str, sample_key: str | None = None) -> Interaction | None:
        """Parse and sample one decoded object; the interaction when it is to be kept (its inputs
        are checked against the metrics by :meth:`checked`, many at once)."""
        self.counts["received"] += 1
        try:
            interaction = parse_interaction(obj, sample_key)
        except InteractionError as exc:
            self.reject(where, str(exc))
            return None
        if not keep(interaction.key, self.config.sample_rate):
            self.counts["sampled_out"] += 1
            return None
        return interaction

    def checked(self, candidates: list[tuple[Interaction, str]]) -> list[Interaction]:
        """The candidates in which every chosen metric finds its inputs; the others are rejected."""
        if self.checker is None or not candidates:
            return [i for i, _ in candidates]
        problems = self.checker.problems([i for i, _ in candidates])
        kept: list[Interaction] = []
        for (interaction, where), why in zip(candidates, problems, strict=True):
            if why:
                self.reject(where, why)
            else:
                kept.append(interaction)
        return kept

    def _place(self, interaction: Interaction) -> bool:
        start = window_start(interaction.timestamp, self.config.window)
        if start in self.done:
            self.counts["late"] += 1
            return False
        window = self.windows.setdefault(start, {})
        if interaction.id in window:
            self.counts["duplicate"] += 1
            return False
        window[interaction.id] = interaction
        return True

    def add(self, interactions: Iterable[Interaction]) -> int:
        """Put accepted interactions in their windows and the pending file; how many were new."""
        with self._lock:
            placed = [i for i in interactions if self._place(i)]
            self.state.append_pending(placed)
            self.counts["kept"] += len(placed)
        return len(placed)

    def ingest_objects(
        self, objects: Iterable[tuple[Any, str]], rejected: list[dict[str, str]] | None = None
    ) -> int:
        """Ingest ``(decoded object, where it came from)`` pairs; how many were kept. ``rejected``
        receives ``{"where", "reason"}`` of each object refused (the first hundred), for the sender."""
        token = _REJECTIONS.set(rejected)
        try:
            candidates: list[tuple[Interaction, str]] = []
            for obj, where in objects:
                interaction = self.accept(obj, where)
                if interaction is not None:
                    candidates.append((interaction, where))
            return self.add(self.checked(candidates))
        finally:
            _REJECTIONS.reset(token)

    def ingest_lines(self, lines: Iterable[Line]) -> int:
        """Ingest JSONL lines (each a JSON object); a line that is not JSON is rejected."""
        candidates: list[tuple[Interaction, str]] = []
        for line in lines:
            where = f"{line.source} line {line.number}"
            try:
                obj = json.loads(line.text)
            except ValueError as exc:
                self.counts["received"] += 1
                self.reject(where, f"not JSON ({exc})")
                continue
            interaction = self.accept(obj, where)
            if interaction is not None:
                candidates.append((interaction, where))
        return self.add(self.checked(candidates))

    def ingest_spans(self, spans: Iterable[dict[str, Any]]) -> int:
        """Ingest OTLP spans; spans that are not GenAI model calls are skipped (counted)."""
        candidates: list[tuple[Interaction, str]] = []
        for span in spans:
            row = span_row(span)
            if row is None:
                self.counts["spans_skipped"] += 1
                continue
            where = f"span {span['span_id']}"
            interaction = self.accept(row, where, sample_key=span["trace_id"] or None)
            if interaction is not None:
                candidates.append((interaction, where))
        return self.add(self.checked(candidates))

    def tail(self, source: DirectoryTail) -> int:
        """Read what was appended to the tailed directory; the offsets are saved once it is kept."""
        lines, offsets = source.poll()
        kept = self.ingest_lines(lines)
        if offsets != source.offsets:
            self.state.save_offsets(offsets)
            source.commit(offsets)
        return kept

    # --- windows --------------------------------------------------------------------------------

    def due(self, everything: bool = False) -> list[int]:
        """Starts of the windows ready to evaluate: closed (end + grace passed), or every one."""
        now = self.clock()
        with self._lock:
            return sorted(
                s for s in self.windows if everything or now >= s + self.config.window + self.config.grace
            )

    def evaluate_due(self, everything: bool = False, progress: Any = None) -> list[WindowReport]:
        """Evaluate every ready window, oldest first; a window whose evaluation fails stays pending
        (and the later ones wait for it)."""
        reports: list[WindowReport] = []
        with self._evaluating:
            for start in self.due(everything):
                report = self._evaluate_window(start, progress)
                if report is None:
                    break
                reports.append(report)
        return reports

    def _evaluate_window(self, start: int, progress: Any) -> WindowReport | None:
        from touchstone.engine.runner import evaluate
        from touchstone.errors import FailedScoresWarning

        with self._lock:
            batch = sorted(self.windows.get(start, {}).values(), key=lambda i: (i.timestamp, i.id))
        end = start + self.config.window
        meta = {
            "name": self.config.name,
            "window_start": iso(start),
            "window_end": iso(end),
            "window_seconds": self.config.window,
            "sample_rate": self.config.sample_rate,
            "thresholds": dict(self.config.thresholds),
            "baseline_windows": self.config.baseline,
        }
        try:
            with warnings.catch_warnings():  # a window's failures are counted in its summary
                warnings.simplefilter("ignore", FailedScoresWarning)
                result = evaluate(
                    data=[i.data for i in batch],
                    evaluation_name=run_name(self.config.name, start),
                    store=self.store,
                    progress=progress,
                    monitor=meta,
                    **self.plan.evaluate_kwargs(),
                )
        except Exception as exc:  # the judge is down, the store is locked...: try again next time
            self.failed_windows += 1
            log.error(
                "window %s of monitor %s not evaluated (kept for the next attempt): %s",
                iso(start),
                self.config.name,
                exc,
            )
            return None
        run_id = str(result.run["id"])
        report = WindowReport(start, end, run_id, len(batch), result.summary, [], self.main_metrics())
        report.alerts = self.alerts_for(report)
        self._close(start, len(batch))
        for sink in self.sinks:
            sink.send(report.alerts)
        if self.exporter is not None:
            self.exporter(report, list(result.rows))  # a window's rows, few
        return report

    def _close(self, start: int, evaluated: int) -> None:
        with self._lock:
            arrived = len(self.windows.pop(start, {})) - evaluated
            self.counts["late"] += max(arrived, 0)  # came in while the window was being evaluated
            self.done.add(start)
            self.counts["evaluated"] += evaluated
            self.state.rewrite_pending(i for w in self.windows.values() for i in w.values())

    # --- alerts ---------------------------------------------------------------------------------

    def main_metrics(self) -> list[tuple[str, str]]:
        """``(evaluator name, metric key)`` of each chosen evaluator's main score."""
        found = []
        for name, ev in self.plan.evaluators.items():
            info = getattr(ev, "info", None)
            found.append((name, str(getattr(info, "key", None) or name)))
        return found

    def alerts_for(self, report: WindowReport) -> list[Alert]:
        """The threshold and regression alerts of an evaluated window."""
        alerts: list[Alert] = []
        baseline = [w for w in stored_windows(self.store, self.config.name) if w.start < report.start]
        baseline = baseline[-self.config.baseline :] if self.config.baseline > 0 else []
        for evaluator, metric in self.main_metrics():
            entry = report.summary.get(f"{evaluator}.{metric}") or {}
            mean = entry.get("mean")
            if mean is None:
                continue
            higher = bool(entry.get("higher_is_better", True))
            common: dict[str, Any] = {
                "monitor": self.config.name,
                "window_start": iso(report.start),
                "window_end": iso(report.end),
                "metric": evaluator,
                "value": float(mean),
                "n": int(entry.get("n") or 0),
                "run_id": report.run_id,
            }
            limit = self.config.thresholds.get(evaluator)
            if limit is not None and threshold_breached(float(mean), limit, higher):
                side = "under" if higher else "over"
                alerts.append(
                    Alert(
                        kind="threshold",
                        method=f"window mean {side} threshold",
                        reference=float(limit),
                        **common,
                    )
                )
            if baseline:
                alert = self._regression(report.run_id, evaluator, metric, higher, baseline, common)
                if alert is not None:
                    alerts.append(alert)
        return alerts

    def _regression(
        self,
        run_id: str,
        evaluator: str,
        metric: str,
        higher: bool,
        baseline: Sequence[Any],
        common: Mapping[str, Any],
    ) -> Alert | None:
        current = row_scores(self.store, run_id, evaluator, metric)
        before = [x for w in baseline for x in row_scores(self.store, w.run_id, evaluator, metric)]
        if len(current) < max(self.config.min_rows, 2) or len(before) < max(self.config.min_rows, 2):
            return None
        p = regression_p_value(current, before, higher)
        if p >= self.config.alpha:
            return None
        return Alert(
            kind="regression",
            method=f"{WELCH}, alpha={self.config.alpha:g}",
            reference=sum(before) / len(before),
            p_value=p,
            baseline_n=len(before),
            baseline_windows=len(baseline),
            **common,
        )
