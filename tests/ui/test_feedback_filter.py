"""User feedback on the dashboard through starlette's TestClient: a run's rows filtered by their
feedback (any, none, a reported failure, a kind, a mean rating at most x), a feedback column on the
row table, the comparison restricted to rows with feedback (saying how many remain), hostile text
in feedback shown escaped, and bad filter values answered 400."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from starlette.testclient import TestClient
from tests.people.conftest import make_run
from tests.ui.conftest import HOSTILE

from touchstone.people import feedback as fb
from touchstone.store import open_store
from touchstone.store.base import Store
from touchstone.ui import create_app
from touchstone.ui.comparison import FEEDBACK_FILTERS

N = 30
REPORT = HOSTILE[0] + " " + HOSTILE[1]
"""An error report's text a user typed: markup that must stay text."""
PLANTED: dict[str, list[dict[str, Any]]] = {
    "q3": [{"kind": "thumbs_down"}],
    "q5": [{"kind": "rating", "value": 1}, {"kind": "error_report", "text": REPORT}],
    "q7": [{"kind": "rating", "value": 5}, {"kind": "thumbs_up"}],
    "q11": [{"kind": "rating", "value": 2}, {"kind": "rating", "value": 3}],
    "q20": [{"kind": "abandonment"}, {"kind": "session_length", "value": 12}],
}
"""Feedback by interaction (the rows' ``id``); q11's mean rating is 2.5."""


@dataclass(frozen=True)
class FeedbackRuns:
    store: Store
    a: str
    b: str


def plant(store: Store) -> FeedbackRuns:
    """Two runs of the same 30 rows (ids q0..q29; B scores lower on every third row) and the
    :data:`PLANTED` feedback, plus feedback on interactions of no run."""
    rows = [{"id": f"q{i}", "query": f"question {i}", "response": f"answer {i}"} for i in range(N)]
    a = make_run(store, "reference", rows, {"quality": [(4.0, {}) for _ in range(N)]})
    b = make_run(store, "candidate", rows, {"quality": [(2.0 if i % 3 == 0 else 4.0, {}) for i in range(N)]})
    events = [{"interaction_id": i, **e} for i, planted in PLANTED.items() for e in planted]
    events += [{"interaction_id": f"elsewhere-{i}", "kind": "thumbs_down"} for i in range(5)]
    fb.record_feedback(store, events)
    return FeedbackRuns(store, a, b)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FeedbackRuns]:
    store = open_store(str(tmp_path_factory.mktemp("feedback-ui") / "runs.db"))
    try:
        yield plant(store)
    finally:
        store.close()


@pytest.fixture(scope="module")
def client(runs: FeedbackRuns) -> Iterator[TestClient]:
    with TestClient(create_app(runs.store)) as c:
        yield c


def _shown_rows(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'class="row-link" href="[^"]*">(\d+)</a>', page)]


@pytest.mark.parametrize(("query", "expected"), [
    ({"feedback": "any"}, [3, 5, 7, 11, 20]),
    ({"feedback": "failure"}, [3, 5, 11, 20]),
    ({"feedback": "thumbs_down"}, [3]),
    ({"feedback": "error_report"}, [5]),
    ({"feedback": "thumbs_up"}, [7]),
    ({"feedback": "abandonment"}, [20]),
    ({"rating_max": "2.5"}, [5, 11]),
    ({"rating_max": "2"}, [5]),
    ({"feedback": "thumbs_up", "rating_max": "2"}, []),
    ({"feedback": "rating", "q": "question 1"}, [11]),
])
def test_the_run_page_filters_rows_by_feedback(client: TestClient, runs: FeedbackRuns, query: dict[str, str],
                                               expected: list[int]) -> None:
    page = client.get(f"/runs/{runs.a}", params={**query, "size": 100})
    assert page.status_code == 200
    assert _shown_rows(page.text) == expected
    api = client.get(f"/api/runs/{runs.a}/rows", params={**query, "size": 100}).json()
    assert [r["idx"] for r in api["items"]] == expected and api["total"] == len(expected)


def test_rows_without_feedback_and_the_filters_choices(client: TestClient, runs: FeedbackRuns) -> None:
    page = client.get(f"/runs/{runs.a}", params={"feedback": "none", "size": 100}).text
    assert _shown_rows(page) == [i for i in range(N) if f"q{i}" not in PLANTED]
    assert 'name="feedback"' in page and 'name="rating_max"' in page
    assert '<option value="none" selected>' in page
    assert sorted(v for v, _ in FEEDBACK_FILTERS) == sorted(fb.ROW_FILTERS)  # every filter offered
    # the pager carries the filter
    without = [i for i in range(N) if f"q{i}" not in PLANTED]
    paged = client.get(f"/runs/{runs.a}", params={"feedback": "none", "size": 10, "page": 2}).text
    assert "feedback=none" in paged and _shown_rows(paged) == without[10:20]
    assert f"{len(without)} items · page 2 of 3" in paged


def test_each_row_shows_its_feedback(client: TestClient, runs: FeedbackRuns) -> None:
    rows = {r["idx"]: r for r in client.get(f"/api/runs/{runs.a}/rows", params={"size": 100}).json()["items"]}
    assert rows[3]["feedback"] == {"thumbs_down": 1, "user_failure": True}
    assert rows[11]["feedback"]["rating"] == pytest.approx(2.5)
    assert rows[5]["feedback"]["last_error_report"] == REPORT
    assert rows[0]["feedback"] == {} and rows[0]["interaction_id"] == "q0"
    page = client.get(f"/runs/{runs.a}", params={"feedback": "failure"}).text
    cells = re.findall(r'<td class="feedback">(.*?)</td>', page, re.S)
    assert len(cells) == 4
    assert '<span class="key">thumbs down</span> 1' in cells[0]
    assert '<span class="key">rating</span> 2.5' in cells[2]
    assert '<span class="key">abandonment</span> 1' in cells[3] and "12 s" in cells[3]


def test_hostile_feedback_text_is_escaped(client: TestClient, runs: FeedbackRuns) -> None:
    page = client.get(f"/runs/{runs.a}", params={"feedback": "error_report"}).text
    assert str(escape(REPORT)) in page
    assert REPORT not in page and HOSTILE[0] not in page and HOSTILE[1] not in page
    assert "<img" not in page and "onerror=" not in page.replace("onerror=&#34;", "")
    api = client.get(f"/api/runs/{runs.a}/rows", params={"feedback": "error_report"})
    assert "<script>" not in api.text and api.json()["items"][0]["feedback"]["last_error_report"] == REPORT


@pytest.mark.parametrize(("query", "message"), [
    ({"feedback": "thumbs_sideways"}, "feedback must be one of"),
    ({"rating_max": "low"}, "rating_max must be a number"),
    ({"rating_max": "nan"}, "rating_max must be a finite number"),
])
def test_bad_feedback_filters_answer_400(client: TestClient, runs: FeedbackRuns, query: dict[str, str],
                                         message: str) -> None:
    for url in (f"/runs/{runs.a}", f"/api/runs/{runs.a}/rows", "/compare", "/api/compare"):
        params = {**query, "a": runs.a, "b": runs.b} if "compare" in url else query
        response = client.get(url, params=params)
        assert response.status_code == 400, url
        assert message in response.text, url


def test_the_comparison_restricted_to_rows_with_feedback(client: TestClient, runs: FeedbackRuns) -> None:
    every = client.get("/api/compare", params={"a": runs.a, "b": runs.b}).json()
    assert every["restricted"] is None and every["comparison"]["rows"]["matched"] == N
    failed = client.get("/api/compare", params={"a": runs.a, "b": runs.b, "feedback": "failure"}).json()
    assert failed["restricted"]["kept"] == 4 and failed["restricted"]["matched"] == N
    assert failed["restricted"]["filter"] == "a reported failure"
    assert failed["comparison"]["rows"]["matched"] == 4
    (metric,) = failed["comparison"]["metrics"]
    # the kept rows are 3, 5, 11, 20: B is 2 on rows 3 only (every third row), 4 elsewhere
    assert metric["n_pairs"] == 4 and metric["mean_b"] == pytest.approx((2 + 4 + 4 + 4) / 4)
    assert {c["idx_a"] for c in failed["changed"]} == {3}
    rated = client.get("/api/compare", params={"a": runs.a, "b": runs.b, "rating_max": "2.5"}).json()
    assert rated["restricted"]["kept"] == 2 and rated["comparison"]["rows"]["matched"] == 2

    page = client.get("/compare", params={"a": runs.a, "b": runs.b, "feedback": "thumbs_down"})
    assert page.status_code == 200
    assert re.search(r'<span class="kept">1</span> of 30 matched rows remain', page.text)
    assert '<option value="thumbs_down" selected>' in page.text
    assert client.get("/compare", params={"a": runs.a, "b": "nope", "feedback": "any"}).status_code == 404


def test_the_filter_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    store = open_store(pg_url)
    try:
        planted = plant(store)
        with TestClient(create_app(store)) as c:
            without = [i for i in range(N) if f"q{i}" not in PLANTED]
            for query, expected in (({"feedback": "failure"}, [3, 5, 11, 20]),
                                    ({"rating_max": "2.5"}, [5, 11]), ({"feedback": "none"}, without)):
                got = c.get(f"/api/runs/{planted.a}/rows", params={**query, "size": 100}).json()
                assert [r["idx"] for r in got["items"]] == expected
            compared = c.get("/api/compare",
                             params={"a": planted.a, "b": planted.b, "feedback": "any"}).json()
            assert compared["restricted"]["kept"] == 5
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_rows_with_non_finite_numbers_filter_like_the_others(backend: str, tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:
    """The store writes NaN and infinities as Python does, which the databases' JSON functions do
    not read: the feedback and column filters still answer, and such a row keeps its id."""
    where = str(tmp_path / "runs.db") if backend == "sqlite" else str(request.getfixturevalue("pg_url"))
    store = open_store(where)
    try:
        rows = [{"id": f"q{i}", "query": f"question {i}", "score": float("nan") if i % 2 else 1.0,
                 "spread": [float("inf"), -float("inf")]} for i in range(6)]
        run = make_run(store, "odd numbers", rows)
        fb.record_feedback(store, [{"interaction_id": "q3", "kind": "thumbs_down"}])
        with TestClient(create_app(store)) as c:
            got = c.get(f"/api/runs/{run}/rows", params={"feedback": "thumbs_down"})
            assert got.status_code == 200 and [r["idx"] for r in got.json()["items"]] == [3]
            found = c.get(f"/api/runs/{run}/rows", params={"column": "query", "value": "question 3"})
            assert found.status_code == 200 and [r["idx"] for r in found.json()["items"]] == [3]
            page = c.get(f"/runs/{run}", params={"feedback": "any", "column": "id", "value": "q"})
            assert page.status_code == 200 and "thumbs down" in page.text
    finally:
        store.close()
