"""The dashboard's queries against their definitions: every filter, order and page of the row table
equals the same selection made in Python over the run's stored rows and typed scores; histograms
count what their bins hold; runs, trends and row details read what the store holds. On SQLite (the
session's store) and, for the portable SQL, on a real PostgreSQL server too."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.store.pg_server import PgServer
from tests.ui.conftest import HOSTILE, HOSTILE_COLUMN, HOSTILE_RUN_NAME, N_ROWS, UIRuns

from touchstone.scores import STATUS, ScoreLine, score_line
from touchstone.store import RunStore, ScoreRecord, open_store
from touchstone.store.base import RunInfo, ScoreValue, Store, StoredRow
from touchstone.store.dashboard import RowFilter
from touchstone.store.dashboard_filters import json_text, like_pattern
from touchstone.ui import distributions as dist
from touchstone.ui import row_detail, row_table, run_list, trends, views
from touchstone.ui.run_list import RunFilter
from touchstone.ui.safety import json_bytes, path, safe_href
from touchstone.ui.views import QueryError


def _info(store: Store, run_id: str) -> RunInfo:
    info = store.get_run(run_id)
    assert info is not None
    return info


def _texts(value: Any) -> Iterator[str]:
    """Every key and leaf of a JSON value, as text."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)
    elif value is not None:
        yield value if isinstance(value, str) else json.dumps(value)


def _metric_keeps(v: ScoreValue | None, f: RowFilter) -> bool:
    """Whether a row's line of the filter's metric passes its range, status and verdict filters."""
    if f.min is None and f.max is None and not f.status and not f.passed:
        return True
    if v is None:
        return False
    if f.min is not None and (v.value is None or v.value < f.min):
        return False
    if f.max is not None and (v.value is None or v.value > f.max):
        return False
    if f.status and v.ok != (f.status == "ok"):
        return False
    return not (f.passed and v.passed is not (f.passed == "yes"))


def _column_keeps(r: StoredRow, f: RowFilter) -> bool:
    if not f.column:
        return True
    if f.column not in r.data:
        return False
    cell = r.data[f.column]
    return f.value.lower() in (cell if isinstance(cell, str) else json.dumps(cell)).lower()


def _expected(store: Store, run_id: str, f: RowFilter) -> list[int]:
    """The row indices ``f`` selects, in order, by its written definition (in Python)."""
    rows = {r.idx: r for r in store.get_rows(run_id)}
    values = store.score_values(run_id)
    failed_rows = {v.idx for v in values if not v.ok} | {i for i, r in rows.items() if r.target_error}
    by_metric = {(v.idx, f"{v.evaluator}.{v.metric}"): v for v in values}
    keys = {key for _, key in by_metric}
    metric = f.metric if f.metric in keys else next((k for k in keys if k.split(".", 1)[1] == f.metric), "")

    def keep(r: StoredRow) -> bool:
        needle = f.q.strip().lower()
        if needle and not any(needle in t.lower() for t in (*_texts(r.data), *_texts(r.target),
                                                            r.target_error or "")):
            return False
        if metric and not _metric_keeps(by_metric.get((r.idx, metric)), f):
            return False
        if not metric and f.status and (r.idx in failed_rows) != (f.status == "failed"):
            return False
        return _column_keeps(r, f)

    kept = [idx for idx in sorted(rows) if keep(rows[idx])]
    if f.sort != "idx":
        def value(idx: int) -> tuple[int, float]:
            v = by_metric.get((idx, metric))
            if v is None or v.value is None:
                return (1, 0.0)
            return (0, v.value if f.sort == "value" else -v.value)
        kept.sort(key=lambda idx: (*value(idx), idx))
    return kept


def _all_pages(store: Store, info: RunInfo, f: RowFilter, size: int) -> tuple[list[int], int]:
    found: list[int] = []
    first = row_table.rows_page(store, info, f, 1, size)
    for page in range(1, first.pages + 1):
        got = row_table.rows_page(store, info, f, page, size)
        assert got.total == first.total
        assert len(got.items) <= size
        found += [line.idx for line in got.items]
    return found, first.total


FILTERS = [
    RowFilter(),
    RowFilter(q="blue"),
    RowFilter(q="BLUE"),
    RowFilter(q='onerror="window'),  # quotes are stored escaped in the JSON text
    RowFilter(q="100%"),  # a LIKE wildcard taken literally: no row has it
    RowFilter(q="answer_"),
    RowFilter(metric="f1.f1_score", min=0.5),
    RowFilter(metric="f1.f1_score", max=0.5),
    RowFilter(metric="f1.f1_score", min=0.2, max=0.9),
    RowFilter(metric="f1_score", passed="no"),
    RowFilter(metric="rouge.rouge_precision", passed="yes", sort="-value"),
    RowFilter(metric="f1.f1_score", sort="value"),
    RowFilter(metric="f1.f1_score", sort="-value", q="answer"),
    RowFilter(column="topic", value="COLOURS"),
    RowFilter(column=HOSTILE_COLUMN, value="<script>"),
    RowFilter(column="topic", value="numbers", metric="f1.f1_score", min=0.99),
    RowFilter(column="no such column", value="x"),
]


@pytest.mark.parametrize("f", FILTERS, ids=lambda f: repr(f)[:80])
def test_row_filters_and_pages_equal_their_definition(ui_runs: UIRuns, f: RowFilter) -> None:
    store = ui_runs.store
    for run_id in (ui_runs.baseline, ui_runs.candidate):
        info = _info(store, run_id)
        expected = _expected(store, run_id, f)
        for size in (7, 50):
            found, total = _all_pages(store, info, f, size)
            assert found == expected
            assert total == len(expected)


@pytest.mark.parametrize("f", [RowFilter(status="failed"), RowFilter(status="ok"),
                               RowFilter(metric="faithfulness.faithfulness", status="failed"),
                               RowFilter(metric="coherence.coherence", status="ok", sort="-value"),
                               RowFilter(q="fail-this-row")], ids=repr)
def test_status_filters_on_a_run_with_failures(ui_runs: UIRuns, f: RowFilter) -> None:
    store = ui_runs.store
    info = _info(store, ui_runs.judged)
    found, _ = _all_pages(store, info, f, 5)
    assert found == _expected(store, ui_runs.judged, f)
    if f.status == "failed" or f.q:
        assert found == [4, 9]  # the two rows whose judge replies were unusable


def test_random_filters_equal_their_definition(ui_runs: UIRuns) -> None:
    rng = random.Random(7)
    store = ui_runs.store
    info = _info(store, ui_runs.candidate)
    metrics = ["f1.f1_score", "rouge.rouge", "rouge.rouge_recall"]
    for _ in range(40):
        lo = rng.choice([None, round(rng.random(), 2)])
        hi = rng.choice([None, round(rng.random(), 2)])
        if lo is not None and hi is not None and lo > hi:
            lo, hi = hi, lo
        f = RowFilter(q=rng.choice(["", "blue", "answer 1", "else"]), metric=rng.choice(metrics),
                      min=lo, max=hi, passed=rng.choice(["", "yes", "no"]), status=rng.choice(["", "ok"]),
                      sort=rng.choice(["idx", "value", "-value"]),
                      column="topic", value=rng.choice(["", "col", "num"]))
        size = rng.choice([3, 10, 100])
        page = row_table.rows_page(store, info, f, 1, size)
        expected = _expected(store, ui_runs.candidate, f)
        assert page.total == len(expected)
        assert [line.idx for line in page.items] == expected[:size]


def test_a_page_holds_previews_and_typed_scores(ui_runs: UIRuns) -> None:
    store = ui_runs.store
    info = _info(store, ui_runs.baseline)
    page = row_table.rows_page(store, info, RowFilter(), 1, 5)
    assert page.total == N_ROWS and page.pages == -(-N_ROWS // 5)
    line = page.items[0]
    assert set(line.scores) == {"f1.f1_score", "rouge.rouge", "rouge.rouge_precision", "rouge.rouge_recall",
                                "rouge.rouge_f1_score"}
    stored = {(v.metric): v for v in store.score_values(ui_runs.baseline, "f1") if v.idx == line.idx}
    assert line.scores["f1.f1_score"]["value"] == stored["f1_score"].value
    assert line.inputs[HOSTILE_COLUMN] == HOSTILE[0]
    long = row_table.preview("x" * 500)
    assert len(long) == row_table.PREVIEW_CHARS and long.endswith("…")


@pytest.mark.parametrize(("f", "message"), [
    (RowFilter(status="broken"), "status must be"),
    (RowFilter(metric="f1.f1_score", min=2, max=1), "above max"),
    (RowFilter(min=0.5), "needs a metric"),
    (RowFilter(metric="nope"), "unknown metric 'nope'"),
    (RowFilter(value="x"), "needs a column"),
    (RowFilter(metric="f1.f1_score", sort="sideways"), "sort must be"),
])
def test_bad_row_filters_say_what_was_expected(ui_runs: UIRuns, f: RowFilter, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        row_table.rows_page(ui_runs.store, _info(ui_runs.store, ui_runs.baseline), f)


def test_histograms_count_what_their_bins_hold(ui_runs: UIRuns) -> None:
    store = ui_runs.store
    for run_id in (ui_runs.baseline, ui_runs.judged):
        info = _info(store, run_id)
        for item in dist.distributions(store, info):
            ev, metric = item["evaluator"], item["metric"]
            lines = store.score_values(run_id, ev, metric)
            values = [v.value for v in lines if v.value is not None]
            assert item["n"] == len(values)
            assert item["n_failed"] == sum(not v.ok for v in lines)
            assert sum(item["failures"].values()) == item["n_failed"]
            if not values:
                continue
            bins = item["bins"]
            assert sum(b["count"] for b in bins) == len(values)
            if item["integers"]:  # a 1-5 rating: one bin per value
                assert all(b["hi"] - b["lo"] == 1 for b in bins)
                assert [b["count"] for b in bins] == [
                    sum(x == (b["lo"] + b["hi"]) / 2 for x in values) for b in bins]
            elif min(values) == max(values):  # one value only: one bin
                assert bins == [{"lo": values[0], "hi": values[0], "count": len(values)}]
            else:  # equal bins between the lowest and highest value, by the written formula
                lo, hi = min(values), max(values)
                assert bins[0]["lo"] == lo and bins[-1]["hi"] == hi and len(bins) == dist.MAX_BINS
                expected = [0] * dist.MAX_BINS
                for x in values:
                    expected[dist.bin_index(x, lo, hi)] += 1
                assert [b["count"] for b in bins] == expected, item["key"]
    judged = {i["key"]: i for i in dist.distributions(store, _info(store, ui_runs.judged))}
    assert judged["coherence.coherence"]["failures"] == {"judge_reply": 2}


def test_runs_list_filters(ui_runs: UIRuns) -> None:
    store = ui_runs.store
    everything = run_list.list_runs(store, RunFilter())
    assert everything.total == 4
    assert {r.id for r in everything.items} == {ui_runs.baseline, ui_runs.candidate, ui_runs.judged,
                                                ui_runs.chat}
    assert [r.id for r in run_list.list_runs(store, RunFilter(name="CANDI")).items] == [ui_runs.candidate]
    assert [r.id for r in run_list.list_runs(store, RunFilter(name="<script>")).items] == [ui_runs.judged]
    assert run_list.list_runs(store, RunFilter(name="%")).total == 0  # a literal percent sign
    by_metric = run_list.list_runs(store, RunFilter(metric="faithfulness"))
    assert [r.id for r in by_metric.items] == [ui_runs.judged]
    assert {r.id for r in run_list.list_runs(store, RunFilter(metric="rouge.rouge_recall")).items} == {
        ui_runs.baseline, ui_runs.candidate}
    assert run_list.list_runs(store, RunFilter(metric="rouge_")).total == 0  # no metric of that name
    day = _info(store, ui_runs.baseline).started[:10]
    assert run_list.list_runs(store, RunFilter(since=day, until=day)).total == 4
    assert run_list.list_runs(store, RunFilter(until="2000-01-01")).total == 0
    assert run_list.list_runs(store, RunFilter(status="completed_with_failures")).total == 1
    paged = [run_list.list_runs(store, RunFilter(), p, 3) for p in (1, 2)]
    assert [len(p.items) for p in paged] == [3, 1] and paged[0].pages == 2
    with pytest.raises(QueryError, match="since must be a date"):
        run_list.list_runs(store, RunFilter(since="yesterday"))


def test_run_line_shows_main_metrics_at_a_glance(ui_runs: UIRuns) -> None:
    line = run_list.run_line(_info(ui_runs.store, ui_runs.judged))
    assert [m["key"] for m in line.metrics] == ["faithfulness.faithfulness", "coherence.coherence"]
    assert line.failures == sum(s["n_failed"] for s in
                                views.summary_of(_info(ui_runs.store, ui_runs.judged)).values())
    assert line.name == HOSTILE_RUN_NAME and line.rows == 12


def test_row_detail_has_reasons_per_turn_and_evidence(ui_runs: UIRuns) -> None:
    store = ui_runs.store
    detail = row_detail.row_detail(store, _info(store, ui_runs.judged), 0)
    assert detail is not None
    assert detail["inputs"]["response"].startswith(HOSTILE[0])
    reasons = dict(detail["results"]["coherence"]["reasons"])
    assert reasons["coherence_reason"] == HOSTILE[2] + " and " + HOSTILE[6]
    assert [(e["claim"], e["verdict"], e["reason"]) for e in detail["evidence"]] == [
        (HOSTILE[0], "supported", HOSTILE[1]), ("Bananas are blue.", "unsupported", HOSTILE[4])]
    assert {s["metric"] for s in detail["scores"]} >= {"faithfulness", "coherence"}
    failed = row_detail.row_detail(store, _info(store, ui_runs.judged), 4)
    assert failed is not None and failed["results"]["coherence"]["failed"]
    assert "coherence_error" in dict(failed["results"]["coherence"]["reasons"])
    chat = row_detail.row_detail(store, _info(store, ui_runs.chat), 0)
    assert chat is not None
    turns = chat["results"]["coherence"]["per_turn"]
    assert turns["columns"][0] == "coherence" and len(turns["rows"]) == 2
    assert not any(c.endswith("_properties") for c in turns["columns"])
    assert row_detail.row_detail(store, _info(store, ui_runs.chat), 99) is None


def test_trend_reads_each_run_mean_and_threshold(ui_runs: UIRuns) -> None:
    store = ui_runs.store
    data = trends.trend(store, "f1_score")
    # oldest first (runs started within the same second, as these may be, have no order between them)
    assert {p["run_id"] for p in data["points"]} == {ui_runs.baseline, ui_runs.candidate}
    assert [p["started"] for p in data["points"]] == sorted(p["started"] for p in data["points"])
    for p in data["points"]:
        s = views.summary_of(_info(store, p["run_id"]))["f1.f1_score"]
        assert p["mean"] == s["mean"] and p["ci95"] == s["ci95"] and p["threshold"] == 0.5
        assert p["below"] == (s["mean"] < 0.5)
    recall = trends.trend(store, "rouge.rouge_recall", name="cand")
    assert [p["run_id"] for p in recall["points"]] == [ui_runs.candidate]
    assert recall["points"][0]["threshold"] == 0.5  # the secondary metric's own threshold
    assert trends.trend(store, "coherence")["points"][0]["threshold"] == 3.0
    with pytest.raises(QueryError, match="choose a metric"):
        trends.trend(store, " ")


def test_like_patterns_and_json_text() -> None:
    assert like_pattern("a%b_c\\") == "%a\\%b\\_c\\\\%"
    assert json_text('say "hi"\n') == 'say \\"hi\\"\\n'


def test_links_and_json_stay_data() -> None:
    assert path("runs", "a/../b", "rows", 3) == "/runs/a%2F..%2Fb/rows/3"
    assert path("trends", metric="f1 & <x>", name="") == "/trends?metric=f1+%26+%3Cx%3E"
    for bad in ("javascript:alert(1)", " JaVaScRiPt:alert(1)", "java\tscript:x", "data:text/html,<b>",
                "//evil.example/x", "/\\evil", "vbscript:x"):
        assert safe_href(bad) == "#"
    assert safe_href("/runs/x") == "/runs/x" and safe_href("https://example.org") == "https://example.org"
    encoded = json_bytes({"x": "</script><b>&\u2028", "n": 1})
    assert b"<" not in encoded and b">" not in encoded and b"&" not in encoded
    assert json.loads(encoded) == {"x": "</script><b>&\u2028", "n": 1}


# ------------------------------------------------------------------------------ PostgreSQL
@pytest.fixture(scope="module")
def pg_copy(pg_server: PgServer, ui_runs: UIRuns) -> Iterator[tuple[Store, dict[str, str]]]:
    """The session's lexical and judged runs copied into a fresh database on a real PostgreSQL."""
    store = open_store(pg_server.url(pg_server.create_database()))
    ids: dict[str, str] = {}
    src = ui_runs.store
    for run_id in (ui_runs.baseline, ui_runs.judged):
        info = _info(src, run_id)
        new = store.create_run(info.config, info.name, info.version or "")
        store.put_rows(new, src.get_rows(run_id))
        lines: dict[tuple[int, str], list[ScoreLine]] = {}
        for v in src.score_values(run_id):
            passed = None if v.passed is None else int(v.passed)
            lines.setdefault((v.idx, v.evaluator), []).append(
                score_line(v.metric, v.value, v.label, v.status.value, v.error_kind, passed))
        by_evaluator: dict[str, list[ScoreRecord]] = {}
        for (idx, evaluator), (outputs, usage) in src.get_scores(run_id).items():
            typed = lines.get((idx, evaluator), [])
            failed = any(line[STATUS] != "ok" for line in typed)
            record = ScoreRecord(idx, outputs, failed, usage, tuple(typed))
            by_evaluator.setdefault(evaluator, []).append(record)
        for evaluator, items in by_evaluator.items():
            store.put_scores(new, evaluator, items)
        store.finish_run(new, info.status, info.metrics or {}, info.summary or {})
        ids[run_id] = new
    try:
        yield store, ids
    finally:
        store.close()


def test_the_same_queries_on_postgresql(ui_runs: UIRuns, pg_copy: tuple[Store, dict[str, str]]) -> None:
    pg, ids = pg_copy
    lite = ui_runs.store
    def page_of(f: RowFilter) -> Callable[[Store, str], Any]:
        return lambda s, r: [line.idx for line in row_table.rows_page(s, _info(s, r), f, 2, 4).items]

    compare: list[Callable[[Store, str], Any]] = [
        # a row without an id column is the interaction "<run id>:<idx>", and the copy's run ids differ
        lambda s, r: [line.as_dict() | {"scores": line.scores, "interaction_id": None}
                      for line in row_table.rows_page(s, _info(s, r), RowFilter(), 1, 100).items],
        *(page_of(f) for f in FILTERS),
        lambda s, r: dist.distributions(s, _info(s, r)),
        lambda s, r: row_table.rows_page(s, _info(s, r), RowFilter(status="ok"), 1, 100).total,
        lambda s, r: row_detail.row_detail(s, _info(s, r), 0)["evidence"],  # type: ignore[index]
    ]
    for run_id in (ui_runs.baseline, ui_runs.judged):
        for ask in compare:
            try:
                expected = ask(lite, run_id)
            except QueryError:
                continue
            assert ask(pg, ids[run_id]) == expected
    assert run_list.list_runs(pg, RunFilter(name="<SCRIPT>")).items[0].id == ids[ui_runs.judged]
    assert [p["run_id"] for p in trends.trend(pg, "f1_score")["points"]] == [ids[ui_runs.baseline]]
    judged = _info(pg, ids[ui_runs.judged])
    assert [line.idx for line in row_table.rows_page(pg, judged, RowFilter(status="failed")).items] == [4, 9]


def test_monitor_windows_trend_at_their_start_with_threshold_crossings_marked(tmp_path: Path) -> None:
    """A monitor's windows (runs named ``monitor:NAME:START``) are drawn at their window's start, in
    window order whatever order they were evaluated in; a mean under the threshold is marked."""
    store = RunStore(tmp_path / "runs.db")
    config = {"evaluators": {"f1": {"metric": "f1_score", "options": {"threshold": 0.6}}}}
    means = {"2026-01-01T12:00:00Z": 0.8, "2026-01-01T10:00:00Z": 0.7, "2026-01-01T11:00:00Z": 0.4}
    for start, mean in means.items():  # evaluated out of window order
        run_id = store.create_run(config, f"monitor:shop:eu:{start}", "test")
        entry = {"n": 10, "n_failed": 0, "mean": mean, "ci95": [mean - 0.1, mean + 0.1],
                 "higher_is_better": True}
        store.finish_run(run_id, "completed", {}, {"summary": {"f1.f1_score": entry}})
    store.create_run(config, "monitor:shop:eu:not-a-time", "test")  # unfinished: no summary, not drawn
    points = trends.trend(store, "f1_score", name="monitor:shop:eu:")["points"]
    assert [(p["at"], p["mean"], p["below"], p["monitor"]) for p in points] == [
        ("2026-01-01T10:00:00+00:00", 0.7, False, "shop:eu"),
        ("2026-01-01T11:00:00+00:00", 0.4, True, "shop:eu"),
        ("2026-01-01T12:00:00+00:00", 0.8, False, "shop:eu"),
    ]
    store.close()
