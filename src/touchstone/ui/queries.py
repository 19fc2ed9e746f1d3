"""What the dashboard reads from a run store: every query is portable SQL through
:meth:`~touchstone.store.base.Store.fetch_all` (``?`` placeholders), so the same code serves SQLite and
PostgreSQL. Paging, search and the score filters are SQL (``LIMIT``/``OFFSET``, ``WHERE`` over
``score_values``), so a page of a 100,000-row run costs one page of rows, not the run.

Nothing here imports the web framework: the functions take a store and plain values and return plain
values (dataclasses, dicts), which the pages render and the ``/api`` routes send as JSON.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from touchstone.cli.show import claim_evidence
from touchstone.people import feedback as fb
from touchstone.store.base import RunInfo, Store
from touchstone.ui.monitor_alerts import alerts_for

ESCAPE = "\\"
LIKE_ESCAPE = f" ESCAPE '{ESCAPE}'"
PREVIEW_CHARS = 140
"""How much of a long text the row table shows (the row page shows everything)."""
MAX_BINS = 20


class QueryError(ValueError):
    """A filter the dashboard cannot apply (a bad date, a range with min above max, an unknown
    metric); the message says what was expected. The pages answer it with status 400."""


class NotFound(LookupError):
    """No such run or row; the pages answer it with status 404."""


def like_pattern(text: str) -> str:
    """``%text%`` for ``LIKE ... ESCAPE '\\'``, with the wildcards of ``text`` taken literally."""
    for ch in (ESCAPE, "%", "_"):
        text = text.replace(ch, ESCAPE + ch)
    return f"%{text}%"


def json_text(text: str) -> str:
    """``text`` as it appears inside a JSON string in the store's columns (quotes, backslashes and
    control characters escaped), so a search for ``say "hi"`` finds it in the encoded data."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _loads(text: Any) -> Any:
    if text is None or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None, recursively (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def finite_dict(value: dict[str, Any]) -> dict[str, Any]:
    """:func:`finite` of a dict, typed as one."""
    return {str(k): finite(v) for k, v in value.items()}


def finite_list(value: list[Any]) -> list[Any]:
    """:func:`finite` of a list, typed as one."""
    return [finite(v) for v in value]


# ----------------------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class MetricRef:
    """One metric of a run: the evaluator that produced it and the metric's name (the summary's key
    is ``<evaluator>.<metric>``)."""

    evaluator: str
    metric: str

    @property
    def key(self) -> str:
        return f"{self.evaluator}.{self.metric}"


def summary_of(info: RunInfo) -> dict[str, dict[str, Any]]:
    """The per-metric summary of a run (``{"<evaluator>.<metric>": {n, mean, ci95, ...}}``); empty
    for a run that did not finish."""
    doc = (info.summary or {}).get("summary")
    return {str(k): v for k, v in doc.items() if isinstance(v, dict)} if isinstance(doc, dict) else {}


def split_key(key: str, evaluators: Sequence[str]) -> MetricRef:
    """``<evaluator>.<metric>`` split at the longest evaluator name that prefixes it (names may hold
    dots), else at the first dot."""
    for name in sorted(evaluators, key=len, reverse=True):
        if key.startswith(name + ".") and len(key) > len(name) + 1:
            return MetricRef(name, key[len(name) + 1:])
    head, _, tail = key.partition(".")
    return MetricRef(head, tail)


def run_metrics(store: Store, info: RunInfo) -> list[MetricRef]:
    """The metrics of a run: the summary's, or for a run without one (still running, aborted early)
    the distinct metrics of its typed score lines."""
    evaluators = list(info.config.get("evaluators") or {})
    summary = summary_of(info)
    if summary:
        return [split_key(k, evaluators) for k in summary]
    rows = store.fetch_all(
        "SELECT DISTINCT evaluator, metric FROM score_values WHERE run_id = ? ORDER BY evaluator, metric",
        (info.id,),
    )
    return [MetricRef(str(e), str(m)) for e, m in rows]


def main_metrics(info: RunInfo) -> list[str]:
    """The summary keys of each evaluator's main metric (what the runs list shows at a glance)."""
    keys = []
    for name, ev in (info.config.get("evaluators") or {}).items():
        metric = ev.get("metric") if isinstance(ev, dict) else None
        if metric:
            keys.append(f"{name}.{metric}")
    summary = summary_of(info)
    found = [k for k in keys if k in summary]
    return found or list(summary)[:6]


def find_metric(metrics: Sequence[MetricRef], wanted: str) -> MetricRef:
    """The metric named ``wanted`` (``<evaluator>.<metric>`` or a metric name alone)."""
    for ref in metrics:
        if wanted == ref.key:
            return ref
    matches = [ref for ref in metrics if ref.metric == wanted]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(ref.key for ref in metrics) or "none"
    raise QueryError(f"unknown metric {wanted!r}; this run has: {known}")


# ------------------------------------------------------------------------------------------- runs
@dataclass(frozen=True)
class RunFilter:
    """The runs list's filters: part of the name (case-insensitive), started on or after ``since``
    and on or before ``until`` (dates, ``YYYY-MM-DD``, UTC), a metric the run has, a status."""

    name: str = ""
    since: str = ""
    until: str = ""
    metric: str = ""
    status: str = ""


def _day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise QueryError(f"{what} must be a date as YYYY-MM-DD, got {text!r}") from None


def _run_where(f: RunFilter) -> tuple[str, list[Any]]:
    where, args = ["1 = 1"], []
    if f.name.strip():
        where.append("LOWER(COALESCE(name, '')) LIKE ?" + LIKE_ESCAPE)
        args.append(like_pattern(f.name.strip().lower()))
    if f.since.strip():
        where.append("started >= ?")
        args.append(_day(f.since, "since").isoformat())
    if f.until.strip():
        where.append("started < ?")
        args.append((_day(f.until, "until") + timedelta(days=1)).isoformat())
    if f.status.strip():
        where.append("status = ?")
        args.append(f.status.strip())
    if f.metric.strip():
        # a cheap text pre-filter on the summary document; the exact check is made on the decoded one
        where.append("summary LIKE ?" + LIKE_ESCAPE)
        args.append(like_pattern(json_text(f.metric.strip())))
    return " AND ".join(where), args


@dataclass
class RunLine:
    """One run as the runs list shows it."""

    id: str
    name: str | None
    started: str
    finished: str | None
    status: str
    rows: int | None
    data: str
    metrics: list[dict[str, Any]]
    failures: int

    def as_dict(self) -> dict[str, Any]:
        return finite_dict(self.__dict__)


_RUN_COLUMNS = "id, name, started, finished, status, config, metrics, summary, version"


def _info(row: Sequence[Any]) -> RunInfo:
    return RunInfo(
        id=str(row[0]), name=row[1], started=str(row[2]), finished=row[3], status=str(row[4]),
        config=_loads(row[5]) or {}, metrics=_loads(row[6]), summary=_loads(row[7]), version=row[8],
    )


def _has_metric(info: RunInfo, metric: str) -> bool:
    evaluators = list(info.config.get("evaluators") or {})
    for key in summary_of(info):
        ref = split_key(key, evaluators)
        if metric in (key, ref.metric):
            return True
    return False


def run_line(info: RunInfo) -> RunLine:
    """A run's line in the runs list: its main metrics (mean, pass rate, failed rows) at a glance."""
    summary = summary_of(info)
    shown = []
    for key in main_metrics(info):
        s = summary[key]
        shown.append({"key": key, "mean": s.get("mean"), "pass_rate": s.get("pass_rate"),
                      "n": s.get("n"), "n_failed": s.get("n_failed", 0)})
    failures = sum(int(s.get("n_failed") or 0) for s in summary.values())
    n_rows = info.config.get("n_rows")
    return RunLine(info.id, info.name, info.started, info.finished, info.status,
                   n_rows if isinstance(n_rows, int) else None, str(info.config.get("data") or ""),
                   shown, failures)


@dataclass
class Page:
    """One page of a list: its items, the page number (from 1), the page size and the total count."""

    items: list[Any]
    page: int
    size: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    def as_dict(self) -> dict[str, Any]:
        items = [i.as_dict() if hasattr(i, "as_dict") else i for i in self.items]
        return {"items": finite(items), "page": self.page, "size": self.size, "total": self.total,
                "pages": self.pages}


def list_runs(store: Store, f: RunFilter, page: int = 1, size: int = 50) -> Page:
    """The runs matching ``f``, newest first, one page of them."""
    where, args = _run_where(f)
    sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE {where} ORDER BY started DESC, id DESC"
    if not f.metric.strip():
        total = int(store.fetch_all(f"SELECT COUNT(*) FROM runs WHERE {where}", args)[0][0])
        rows = store.fetch_all(sql + " LIMIT ? OFFSET ?", [*args, size, (page - 1) * size])
        return Page([run_line(_info(r)) for r in rows], page, size, total)
    metric = f.metric.strip()
    infos = [i for i in (_info(r) for r in store.fetch_all(sql, args)) if _has_metric(i, metric)]
    start = (page - 1) * size
    return Page([run_line(i) for i in infos[start:start + size]], page, size, len(infos))


def get_run(store: Store, run_id: str) -> RunInfo | None:
    """One run, or None."""
    rows = store.fetch_all(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
    return _info(rows[0]) if rows else None


def known_statuses(store: Store) -> list[str]:
    """The statuses runs in the store have, for the status filter."""
    found = {str(r[0]) for r in store.fetch_all("SELECT DISTINCT status FROM runs")}
    return sorted(found | {"completed", "completed_with_failures"})


# -------------------------------------------------------------------------------------- run page
@dataclass(frozen=True)
class RowFilter:
    """The row table's filters and order.

    ``q``: text in the row's inputs, target outputs or target error (case-insensitive); ``metric``
    (``<evaluator>.<metric>``) with ``min``/``max`` (its value in that range), ``passed`` (``yes`` /
    ``no``: its verdict) and, when given, the ``status`` filter (``ok`` / ``failed``) applies to that
    metric, else to any evaluator of the row; ``column``/``value``: an input column whose value
    contains the text; ``sort``: ``idx`` (default), ``value`` or ``-value`` (the metric's value,
    missing values last); ``feedback``: rows whose interaction got user feedback of that sort (one
    of :data:`~touchstone.people.feedback.ROW_FILTERS`: ``any``, ``none``, ``failure`` or a kind
    such as ``thumbs_down``); ``rating_max``: rows whose users' mean rating is at most that."""

    q: str = ""
    metric: str = ""
    min: float | None = None
    max: float | None = None
    status: str = ""
    passed: str = ""
    column: str = ""
    value: str = ""
    sort: str = "idx"
    feedback: str = ""
    rating_max: float | None = None


def _check_row_filter(f: RowFilter) -> None:
    if f.status not in ("", "ok", "failed"):
        raise QueryError(f"status must be 'ok' or 'failed', got {f.status!r}")
    if f.passed not in ("", "yes", "no"):
        raise QueryError(f"passed must be 'yes' or 'no', got {f.passed!r}")
    if f.sort not in ("idx", "value", "-value"):
        raise QueryError(f"sort must be 'idx', 'value' or '-value', got {f.sort!r}")
    for name, bound in (("min", f.min), ("max", f.max)):
        if bound is not None and not math.isfinite(bound):
            raise QueryError(f"{name} must be a finite number, got {bound!r}")
    if f.min is not None and f.max is not None and f.min > f.max:
        raise QueryError(f"min ({f.min:g}) is above max ({f.max:g})")
    if not f.metric and (f.min is not None or f.max is not None or f.passed or f.sort != "idx"):
        raise QueryError("a score range, a verdict filter or sorting by value needs a metric")
    if f.value and not f.column:
        raise QueryError("a column value filter needs a column")
    if f.feedback not in ("", *fb.ROW_FILTERS):
        raise QueryError(f"feedback must be one of {', '.join(fb.ROW_FILTERS)}, got {f.feedback!r}")
    if f.rating_max is not None and not math.isfinite(f.rating_max):
        raise QueryError(f"rating_max must be a finite number, got {f.rating_max!r}")


def dialect_of(store: Store) -> str:
    """The store's SQL dialect: ``sqlite`` or ``postgresql``."""
    dialect = getattr(store, "dialect", None)
    return str(getattr(dialect, "name", "sqlite"))


_dialect = dialect_of


def _column_clause(store: Store, column: str, value: str) -> tuple[str, list[Any]]:
    """The rows whose input ``column`` contains ``value`` (case-insensitive), per backend: the JSON
    functions differ between SQLite and PostgreSQL."""
    pattern = like_pattern(value.lower())
    data = fb.json_data_sql(_dialect(store), "r")  # NaN and infinities as null: valid JSON for both
    if _dialect(store) == "postgresql":
        return f"LOWER(CAST({data} AS jsonb) ->> ?) LIKE ?" + LIKE_ESCAPE, [column, pattern]
    # json_each: any key, quotes and dots included, passed as a parameter, never spliced into a path
    return (f"EXISTS (SELECT 1 FROM json_each({data}) je WHERE je.key = ? "
            "AND LOWER(CAST(je.value AS TEXT)) LIKE ?" + LIKE_ESCAPE + ")"), [column, pattern]


def _row_where(store: Store, run_id: str, f: RowFilter, ref: MetricRef | None) -> tuple[str, list[Any]]:
    where: list[str] = ["r.run_id = ?"]
    args: list[Any] = [run_id]
    if f.q.strip():
        pattern = like_pattern(json_text(f.q.strip()).lower())
        where.append(f"(LOWER(r.data) LIKE ?{LIKE_ESCAPE}"
                     f" OR LOWER(COALESCE(r.target, '')) LIKE ?{LIKE_ESCAPE}"
                     f" OR LOWER(COALESCE(r.target_error, '')) LIKE ?{LIKE_ESCAPE})")
        args += [pattern, pattern, like_pattern(f.q.strip().lower())]
    one_metric = "r.idx IN (SELECT idx FROM score_values WHERE run_id = ? AND evaluator = ? AND metric = ?"
    if ref is not None:
        conds: list[str] = []
        extra: list[Any] = []
        if f.min is not None:
            conds.append("value >= ?")
            extra.append(f.min)
        if f.max is not None:
            conds.append("value <= ?")
            extra.append(f.max)
        if f.status:
            conds.append("status = 'ok'" if f.status == "ok" else "status <> 'ok'")
        if f.passed:
            conds.append("passed = ?")
            extra.append(1 if f.passed == "yes" else 0)
        if conds:
            where.append(one_metric + " AND " + " AND ".join(conds) + ")")
            args += [run_id, ref.evaluator, ref.metric, *extra]
    elif f.status:
        # the typed lines, not the JSON results: a narrow table, about a fifth of the time on 100,000 rows
        failed = "r.idx IN (SELECT idx FROM score_values WHERE run_id = ? AND status <> 'ok')"
        where.append(f"(r.target_error IS NOT NULL OR {failed})" if f.status == "failed"
                     else f"(r.target_error IS NULL AND NOT {failed})")
        args.append(run_id)
    if f.column:
        clause, extra = _column_clause(store, f.column, f.value)
        where.append(clause)
        args += extra
    if f.feedback or f.rating_max is not None:
        clause, extra = fb.row_filter_sql(_dialect(store), f.feedback, f.rating_max, "r")
        where.append(clause)
        args += extra
    return " AND ".join(where), args


@dataclass
class RowLine:
    """One row of the row table: its index, a preview of its inputs and target outputs, and each
    metric's typed result."""

    idx: int
    source: str | None
    line: int | None
    inputs: dict[str, str]
    outputs: dict[str, str]
    target_error: str | None
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: bool = False
    interaction_id: str = ""
    feedback: dict[str, Any] = field(default_factory=dict)
    """The interaction's user feedback as columns (see :func:`~touchstone.people.feedback.run_feedback`);
    empty without any."""

    def as_dict(self) -> dict[str, Any]:
        return finite_dict(self.__dict__)


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A value as short text for the table (strings as they are, the rest as JSON), cut at ``limit``."""
    text = value if isinstance(value, str) else json.dumps(finite(value), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rows_page(
    store: Store, info: RunInfo, f: RowFilter, page: int = 1, size: int = 50
) -> Page:
    """One page of a run's rows matching ``f``: their previews, typed scores and user feedback (four
    queries: the page's indices with the count, the page's rows, their score lines, their feedback)."""
    _check_row_filter(f)
    metrics = run_metrics(store, info)
    ref = find_metric(metrics, f.metric) if f.metric else None
    where, args = _row_where(store, info.id, f, ref)
    # With filters the total comes with the page (COUNT(*) OVER ()): the filters are evaluated once,
    # not once for the count and again for the page. Without, the count is a cheap range of the key.
    filtered = where != "r.run_id = ?"
    count = ", COUNT(*) OVER ()" if filtered else ""
    if ref is not None and f.sort != "idx":
        # The metric's value by a lookup on score_values' whole key per row, not a join: a join's plan
        # depends on the planner's statistics, and on a run just written (PostgreSQL before its
        # ANALYZE) it was a nested loop over every pair of rows; the lookup is linear whatever the
        # statistics say.
        value = ("(SELECT sv.value FROM score_values sv WHERE sv.run_id = r.run_id AND sv.evaluator = ? "
                 "AND sv.idx = r.idx AND sv.metric = ?)")
        order = f"{value}{' DESC' if f.sort == '-value' else ''} NULLS LAST, r.idx"
        sql = f"SELECT r.idx{count} FROM rows r WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
        # the params of the ORDER BY come after the WHERE's in the text
        params = [*args, ref.evaluator, ref.metric, size, (page - 1) * size]
    else:
        sql = f"SELECT r.idx{count} FROM rows r WHERE {where} ORDER BY r.idx LIMIT ? OFFSET ?"
        params = [*args, size, (page - 1) * size]
    # the page's indices first (the sort carries no row data), then the page's rows
    got = store.fetch_all(sql, params)
    order_of = [int(r[0]) for r in got]
    if filtered and got:
        total = int(got[0][1])
    else:  # no filter, or a page past the end: count on its own
        total = int(store.fetch_all(f"SELECT COUNT(*) FROM rows r WHERE {where}", args)[0][0])
    lines = []
    if order_of:
        marks = ", ".join("?" for _ in order_of)
        found = {int(r[0]): r for r in store.fetch_all(
            "SELECT idx, source, line, data, target, target_error FROM rows "
            f"WHERE run_id = ? AND idx IN ({marks})", [info.id, *order_of])}
        for idx in order_of:
            _, source, line, data, target, target_error = found[idx]
            decoded = _loads(data)
            out = _loads(target)
            lines.append(RowLine(
                idx, source, line,
                {str(k): preview(v) for k, v in decoded.items()} if isinstance(decoded, dict) else {},
                {str(k): preview(v) for k, v in out.items()} if isinstance(out, dict) else {},
                target_error, failed=target_error is not None,
                interaction_id=fb.interaction_id_of(info.id, idx, decoded),
            ))
    _attach_scores(store, info, lines)
    _attach_feedback(store, lines)
    return Page(lines, page, size, total)


def _attach_feedback(store: Store, lines: list[RowLine]) -> None:
    """Each line's user feedback: one query for the page's interactions."""
    found = fb.feedback_columns(store, [line.interaction_id for line in lines]) if lines else {}
    for line in lines:
        line.feedback = found.get(line.interaction_id, {})


def _attach_scores(store: Store, info: RunInfo, lines: list[RowLine]) -> None:
    if not lines:
        return
    by_idx = {line.idx: line for line in lines}
    evaluators = list(info.config.get("evaluators") or {})
    marks = ", ".join("?" for _ in lines)
    sql = ("SELECT idx, evaluator, metric, value, label, status, error_kind, passed FROM score_values "
           f"WHERE run_id = ? AND idx IN ({marks})")
    args: list[Any] = [info.id, *by_idx]
    if evaluators:  # the key's prefix (run, evaluator, idx): one lookup per (evaluator, row)
        sql += f" AND evaluator IN ({', '.join('?' for _ in evaluators)})"
        args += evaluators
    for idx, evaluator, metric, value, label, status, error_kind, passed in store.fetch_all(sql, args):
        line = by_idx[int(idx)]
        line.scores[f"{evaluator}.{metric}"] = {
            "value": value, "label": label, "status": status, "error_kind": error_kind,
            "passed": None if passed is None else bool(passed),
        }
        if status != "ok":
            line.failed = True


def row_detail(store: Store, info: RunInfo, idx: int) -> dict[str, Any] | None:
    """Everything stored about one row: inputs, target outputs, each evaluator's outputs (reasons,
    per-turn results, properties), typed scores and claim-level evidence; None when there is no
    such row."""
    rows = store.fetch_all(
        "SELECT idx, source, line, data, target, target_error FROM rows WHERE run_id = ? AND idx = ?",
        (info.id, idx),
    )
    if not rows:
        return None
    _, source, line, data, target, target_error = rows[0]
    results: dict[str, dict[str, Any]] = {}
    for evaluator, outputs, failed, usage in store.fetch_all(
        "SELECT evaluator, outputs, failed, usage FROM scores WHERE run_id = ? AND idx = ? "
        "ORDER BY evaluator",
        (info.id, idx),
    ):
        decoded = _loads(outputs)
        decoded = decoded if isinstance(decoded, dict) else {}
        results[str(evaluator)] = {
            "outputs": decoded, "failed": bool(failed), "usage": _loads(usage),
            "reasons": [(str(k), v) for k, v in decoded.items()
                        if str(k).endswith(("_reason", "_error")) and v not in (None, "")],
            "per_turn": per_turn(decoded.get("evaluation_per_turn")),
        }
    # the evaluators named, so the key's prefix (run, evaluator, idx) finds the lines directly
    evaluators = sorted(set(results) | set(info.config.get("evaluators") or {}))
    marks = ", ".join("?" for _ in evaluators) or "NULL"
    scores = [
        {"evaluator": e, "metric": m, "value": v, "label": lab, "status": s, "error_kind": k,
         "passed": None if p is None else bool(p)}
        for e, m, v, lab, s, k, p in store.fetch_all(
            "SELECT evaluator, metric, value, label, status, error_kind, passed FROM score_values "
            f"WHERE run_id = ? AND evaluator IN ({marks}) AND idx = ? ORDER BY evaluator, metric",
            (info.id, *evaluators, idx))
    ]
    evidence = claim_evidence({(idx, ev): (r["outputs"], None) for ev, r in results.items()})
    return finite_dict({
        "run_id": info.id, "idx": idx, "source": source, "line": line, "inputs": _loads(data),
        "target": _loads(target), "target_error": target_error, "results": results, "scores": scores,
        "evidence": evidence,
    })


def per_turn(value: Any) -> dict[str, Any] | None:
    """The SDK's ``evaluation_per_turn`` (``{key: [value of turn 1, turn 2, ...]}``) as a table:
    ``{"columns": keys, "rows": one list of cells per turn}``; None when there is none."""
    if not isinstance(value, dict) or not value:
        return None
    # each turn's properties (prompt, tokens, samples) are long and stay in "all outputs"
    kept = {str(k): v for k, v in value.items() if not str(k).endswith("_properties")}
    if not kept:
        return None
    columns = list(kept)
    lists = [v if isinstance(v, list) else [v] for v in kept.values()]
    turns = max(len(v) for v in lists)
    return {"columns": columns, "rows": [[v[t] if t < len(v) else None for v in lists] for t in range(turns)]}


def input_columns(store: Store, info: RunInfo) -> list[str]:
    """The input columns of a run (the keys of its first row), for the column filter."""
    rows = store.fetch_all("SELECT data FROM rows WHERE run_id = ? ORDER BY idx LIMIT 1", (info.id,))
    data = _loads(rows[0][0]) if rows else None
    return [str(k) for k in data] if isinstance(data, dict) else []


# --------------------------------------------------------------------------------- distributions
def _metric_stats(store: Store, run_id: str, ref: MetricRef) -> dict[str, Any]:
    """One pass over a metric's lines (the key's prefix: run, evaluator): lowest and highest value,
    values, failures by error kind, and whether every value is whole."""
    # CAST(value AS INTEGER) truncates in SQLite and rounds in PostgreSQL: either way it equals the
    # value exactly when the value is whole, which is all this asks. Large values are not cast.
    rows = store.fetch_all(
        "SELECT error_kind, MIN(value), MAX(value), COUNT(value), "
        "SUM(CASE WHEN status <> 'ok' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN value IS NULL OR ABS(value) >= 1000000 THEN 0 "
        "WHEN value <> CAST(value AS INTEGER) THEN 1 ELSE 0 END) "
        "FROM score_values WHERE run_id = ? AND evaluator = ? AND metric = ? GROUP BY error_kind",
        (run_id, ref.evaluator, ref.metric))
    stats: dict[str, Any] = {"lo": None, "hi": None, "n": 0, "n_failed": 0, "fractional": 0, "failures": {}}
    for kind, lo, hi, n, n_failed, fractional in rows:
        if lo is not None:
            stats["lo"] = lo if stats["lo"] is None else min(stats["lo"], lo)
            stats["hi"] = hi if stats["hi"] is None else max(stats["hi"], hi)
        stats["n"] += int(n or 0)
        stats["n_failed"] += int(n_failed or 0)
        stats["fractional"] += int(fractional or 0)
        if n_failed:
            stats["failures"][str(kind or "unknown")] = int(n_failed)
    return stats


def bin_index(value: float, lo: float, hi: float) -> int:
    """The bin of ``value`` among :data:`MAX_BINS` equal bins from ``lo`` to ``hi`` (the highest value
    in the last bin): ``floor((value - lo) * MAX_BINS / (hi - lo))``, as the SQL computes it."""
    return min(MAX_BINS - 1, math.floor((value - lo) * (MAX_BINS / (hi - lo))))


def _histogram(store: Store, run_id: str, ref: MetricRef, lo: float, hi: float,
               integers: bool) -> list[dict[str, Any]]:
    """The bins of a numeric metric, counted in SQL by one ``GROUP BY`` (integer values on a short
    scale: one bin per value; else :data:`MAX_BINS` equal bins, see :func:`bin_index`)."""
    where = "FROM score_values WHERE run_id = ? AND evaluator = ? AND metric = ? AND value IS NOT NULL"
    key = (run_id, ref.evaluator, ref.metric)
    if integers and hi - lo <= MAX_BINS:
        found = store.fetch_all(f"SELECT value, COUNT(*) {where} GROUP BY value", key)
        counts = {round(float(v)): int(c) for v, c in found}
        return [{"lo": v - 0.5, "hi": v + 0.5, "count": counts.get(v, 0)}
                for v in range(round(lo), round(hi) + 1)]
    if hi <= lo:
        return [{"lo": lo, "hi": hi, "count": int(store.fetch_all(f"SELECT COUNT(*) {where}", key)[0][0])}]
    # floor of a non-negative number: SQLite's CAST truncates (so floors it); PostgreSQL's rounds
    pg = _dialect(store) == "postgresql"
    floor = "FLOOR((value - ?) * ?)" if pg else "CAST((value - ?) * ? AS INTEGER)"
    scale = MAX_BINS / (hi - lo)
    bins = [0] * MAX_BINS
    for b, c in store.fetch_all(f"SELECT {floor} AS b, COUNT(*) {where} GROUP BY 1", (lo, scale, *key)):
        bins[min(MAX_BINS - 1, int(b))] += int(c)
    width = (hi - lo) / MAX_BINS
    edges = [round(lo + k * width, 12) for k in range(MAX_BINS)] + [hi]
    return [{"lo": edges[k], "hi": edges[k + 1], "count": bins[k]} for k in range(MAX_BINS)]


def distributions(store: Store, info: RunInfo) -> list[dict[str, Any]]:
    """Per metric: a histogram of its values (integer values on a short scale get one bin each; other
    values :data:`MAX_BINS` equal bins between the lowest and highest), or the counts per label when
    it has no numeric values, and its failures by error kind. Two passes over each metric's lines
    (its range, then its bins), both on the key's prefix (run, evaluator)."""
    out = []
    for ref in run_metrics(store, info):
        stats = _metric_stats(store, info.id, ref)
        if not stats["n"] and not stats["n_failed"]:
            continue
        item: dict[str, Any] = {
            "key": ref.key, "evaluator": ref.evaluator, "metric": ref.metric, "n": stats["n"],
            "n_failed": stats["n_failed"], "failures": stats["failures"], "bins": [], "labels": []}
        if stats["n"]:
            lo, hi = float(stats["lo"]), float(stats["hi"])
            item["integers"] = not stats["fractional"] and abs(hi) < 1_000_000 and abs(lo) < 1_000_000
            item["bins"] = _histogram(store, info.id, ref, lo, hi, item["integers"])
        else:
            item["labels"] = [
                {"label": lab, "count": int(c)} for lab, c in store.fetch_all(
                    "SELECT label, COUNT(*) FROM score_values WHERE run_id = ? AND evaluator = ? "
                    "AND metric = ? AND label IS NOT NULL GROUP BY label ORDER BY COUNT(*) DESC LIMIT 20",
                    (info.id, ref.evaluator, ref.metric))
            ]
        out.append(item)
    return finite_list(out)


# ---------------------------------------------------------------------------------------- trends
def threshold_of(info: RunInfo, ref: MetricRef) -> float | None:
    """The threshold a run used for a metric, as its configuration records it: the evaluator's
    ``threshold`` for its main metric, ``thresholds[<suffix>]`` for a secondary one."""
    ev = (info.config.get("evaluators") or {}).get(ref.evaluator)
    if not isinstance(ev, dict):
        return None
    options = ev.get("options")
    if not isinstance(options, dict):
        return None
    value: Any = None
    if ev.get("metric") == ref.metric:
        value = options.get("threshold")
    elif isinstance(options.get("thresholds"), dict):
        thresholds = options["thresholds"]
        for suffix, v in thresholds.items():
            if ref.metric == suffix or ref.metric.endswith("_" + str(suffix)):
                value = v
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


MONITOR_WINDOW = re.compile(
    r"^monitor:(?P<monitor>.+):(?P<start>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)$")
"""A monitor's window run is named ``monitor:<monitor>:<window start, ISO 8601 UTC>``."""


def point_time(info: RunInfo) -> tuple[str, str | None]:
    """When a run counts on a trend: a monitor window's start (and the monitor's name), else the
    time the run started."""
    found = MONITOR_WINDOW.match(info.name or "")
    if found:
        return found["start"].replace("Z", "+00:00"), found["monitor"]
    return info.started, None


def trend(store: Store, metric: str, name: str = "", limit: int = 500,
          alerts: Mapping[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """A metric's mean over time across runs (oldest first): each run's mean, 95% interval, n, pass
    rate, failed rows and threshold, with ``below`` set where the mean falls on the wrong side of the
    threshold, and ``alerts`` (with ``alerted``) listing what a monitor raised for that window and
    metric (``alerts`` by run id, see :mod:`touchstone.ui.monitor_alerts`: threshold alerts and
    regressions with the method that decided them). ``metric`` is ``<evaluator>.<metric>`` or a
    metric name (every evaluator's);
    ``name`` narrows the runs by part of their name (``monitor:<name>:`` selects a monitor's
    windows, each counted at its window's start, ``at``; other runs at the time they started)."""
    metric = metric.strip()
    if not metric:
        raise QueryError("choose a metric (e.g. f1.f1_score, or f1_score)")
    where, args = _run_where(RunFilter(name=name, metric=metric))
    rows = store.fetch_all(
        f"SELECT {_RUN_COLUMNS} FROM runs WHERE {where} ORDER BY started DESC, id DESC LIMIT ?",
        [*args, limit])
    points = []
    for info in reversed([_info(r) for r in rows]):
        evaluators = list(info.config.get("evaluators") or {})
        for key, s in summary_of(info).items():
            ref = split_key(key, evaluators)
            if metric not in (key, ref.metric):
                continue
            threshold = threshold_of(info, ref)
            mean = s.get("mean")
            higher = s.get("higher_is_better", True) is not False
            below = (threshold is not None and isinstance(mean, (int, float))
                     and (mean < threshold if higher else mean > threshold))
            at, monitor = point_time(info)
            raised = alerts_for(dict(alerts or {}), info.id, key, ref.metric)
            points.append({
                "run_id": info.id, "name": info.name, "started": info.started, "at": at, "monitor": monitor,
                "status": info.status,
                "key": key, "mean": mean, "ci95": s.get("ci95"), "n": s.get("n"),
                "pass_rate": s.get("pass_rate"), "n_failed": s.get("n_failed", 0),
                "threshold": threshold, "below": bool(below), "higher_is_better": higher,
                "alerts": raised, "alerted": bool(raised),
            })
    points.sort(key=lambda p: p["at"])  # stable: runs keep their start order within one moment
    return finite_dict({"metric": metric, "name": name, "points": points})


def all_metric_keys(store: Store, limit: int = 200) -> list[str]:
    """The metric keys of the most recent runs, for the trends page's choice."""
    keys: dict[str, None] = {}
    for r in store.fetch_all(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY started DESC LIMIT ?", (limit,)):
        for key in summary_of(_info(r)):
            keys.setdefault(key, None)
    return sorted(keys)


def summary_rows(info: RunInfo) -> list[dict[str, Any]]:
    """The run's summary as table rows: the usual statistics by name, any other aggregate in
    ``extra``."""
    usual = {"n", "n_failed", "n_rows", "mean", "ci95", "std", "pass_rate", "n_passed", "higher_is_better"}
    out = []
    for key, s in summary_of(info).items():
        extra = {k: v for k, v in s.items() if k not in usual}
        out.append({"key": key, **{k: s.get(k) for k in usual}, "extra": extra})
    return finite_list(out)


def metric_keys(metrics: Sequence[MetricRef]) -> list[str]:
    return [m.key for m in metrics]


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
