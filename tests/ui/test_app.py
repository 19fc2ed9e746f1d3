"""The dashboard's routes through starlette's TestClient: pages and JSON answer with the right status,
security headers on every response, data shown escaped (never as markup), bad filters as 400 with
the reason, unknown runs and rows as 404, static files (Chart.js included) served from the package."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape
from starlette.testclient import TestClient
from tests.ui.conftest import HOSTILE, HOSTILE_COLUMN, HOSTILE_RUN_NAME, N_ROWS, UIRuns

from touchstone.scores import score_line
from touchstone.store import RunStore, ScoreRecord, StoredRow
from touchstone.ui import create_app
from touchstone.ui.safety import CONTENT_SECURITY_POLICY


@pytest.fixture(scope="module")
def client(ui_runs: UIRuns) -> Iterator[TestClient]:
    with TestClient(create_app(ui_runs.store)) as c:
        yield c


class _Elements(HTMLParser):
    """Every element and attribute of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _assert_inert(page: str) -> None:
    """No element or attribute of the page came from data: only our two script files (no inline
    code), no event-handler attribute, no ``javascript:`` URL, no image, SVG, frame or style element."""
    parser = _Elements()
    parser.feed(page)
    scripts = [attrs.get("src") for tag, attrs in parser.tags if tag == "script"]
    assert scripts == ["/static/vendor/chart.umd.min.js", "/static/app.js"]
    assert [tag for tag, _ in parser.tags].count("body") == 1  # the page's own
    for tag, attrs in parser.tags:
        assert tag not in ("img", "svg", "iframe", "style", "object", "embed", "base", "meta" if attrs.get(
            "http-equiv") else ""), tag
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in ("href", "src", "action", "formaction"):
            value = "".join((attrs.get(name) or "").split()).lower()
            assert not value.startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)


def test_pages_answer_with_security_headers(client: TestClient, ui_runs: UIRuns) -> None:
    for url in ("/runs", f"/runs/{ui_runs.baseline}", f"/runs/{ui_runs.judged}/rows/0", "/trends",
                "/trends?metric=f1_score", "/compare", f"/compare?a={ui_runs.baseline}&b={ui_runs.candidate}",
                f"/api/runs/{ui_runs.baseline}", "/static/app.js", "/static/vendor/chart.umd.min.js"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY and "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert client.get("/", follow_redirects=False).headers["location"] == "/runs"


def test_chart_library_and_its_license_ship_in_the_package(client: TestClient) -> None:
    body = client.get("/static/vendor/chart.umd.min.js").text
    assert body.startswith("/*!\n * Chart.js v4.") and "Released under the MIT License" in body[:300]
    assert "MIT License" in client.get("/static/vendor/chart.js.LICENSE.md").text
    page = client.get("/runs").text
    assert "http://" not in page and "https://" not in page  # nothing loaded from elsewhere


def test_hostile_strings_are_shown_escaped(client: TestClient, ui_runs: UIRuns) -> None:
    runs = client.get("/runs").text
    _assert_inert(runs)
    assert escape(HOSTILE_RUN_NAME) in runs
    assert "run 49" not in runs  # {{7*7}} in a run name is text, not a template
    row = client.get(f"/runs/{ui_runs.judged}/rows/0").text
    _assert_inert(row)
    assert escape(HOSTILE[0]) in row  # the claim and the response
    assert escape(HOSTILE[1]) in row  # the claim's reason (inside a table cell)
    assert escape(HOSTILE[2] + " and " + HOSTILE[6]) in row  # the judge's reason
    run = client.get(f"/runs/{ui_runs.baseline}").text
    _assert_inert(run)
    assert escape(HOSTILE_COLUMN) in run  # a column name in the table head
    assert "JINJA" not in run.replace("{% if true %}JINJA{% endif %}", "")
    assert "{{7*7}}" in client.get(f"/runs/{ui_runs.baseline}/rows/11").text
    for url in (f"/runs/{ui_runs.chat}/rows/0", f"/compare?a={ui_runs.baseline}&b={ui_runs.candidate}",
                "/trends?metric=coherence"):
        _assert_inert(client.get(url).text)


def test_json_cannot_close_a_script_element(client: TestClient, ui_runs: UIRuns) -> None:
    response = client.get(f"/api/runs/{ui_runs.judged}/rows/0")
    assert response.headers["content-type"] == "application/json"
    assert "<" not in response.text and ">" not in response.text
    assert response.json()["evidence"][0]["claim"] == HOSTILE[0]


def test_run_page_pages_and_filters(client: TestClient, ui_runs: UIRuns) -> None:
    first = client.get(f"/runs/{ui_runs.baseline}", params={"size": 10}).text
    assert first.count('class="row-link"') == 10
    assert f"{N_ROWS} items · page 1 of 5" in first
    assert 'rel="next" href="/runs/' in first and "page=2" in first
    last = client.get(f"/runs/{ui_runs.baseline}", params={"size": 10, "page": 5}).text
    assert last.count('class="row-link"') == N_ROWS - 40 and 'rel="next"' not in last
    filtered = client.get(f"/runs/{ui_runs.judged}", params={"status": "failed"}).text
    assert re.findall(r'class="row-link" href="[^"]+">(\d+)<', filtered) == ["4", "9"]
    api = client.get(f"/api/runs/{ui_runs.baseline}/rows",
                     params={"metric": "f1.f1_score", "min": "0.99", "size": 100}).json()
    assert api["total"] == len(api["items"]) and all(i["scores"]["f1.f1_score"]["value"] >= 0.99
                                                     for i in api["items"])


def test_bad_filters_answer_400_with_the_reason(client: TestClient, ui_runs: UIRuns) -> None:
    response = client.get(f"/runs/{ui_runs.baseline}", params={"metric": "f1.f1_score", "min": "abc"})
    assert response.status_code == 400 and "min must be a number, got &#39;abc&#39;" in response.text
    api = client.get(f"/api/runs/{ui_runs.baseline}/rows", params={"metric": "zzz<script>"})
    assert api.status_code == 400 and "unknown metric" in api.json()["error"]
    assert client.get("/runs", params={"since": "<script>"}).status_code == 400
    assert client.get("/runs", params={"page": 0}).status_code == 422
    assert client.get("/compare", params={"a": ui_runs.baseline, "b": ui_runs.candidate,
                                          "alpha": "2"}).status_code == 400


def test_unknown_runs_and_rows_answer_404(client: TestClient, ui_runs: UIRuns) -> None:
    missing = client.get("/runs/<img src=x onerror=alert(1)>")
    assert missing.status_code == 404 and "&lt;img src=x onerror=alert(1)&gt;" in missing.text
    _assert_inert(missing.text)
    assert client.get(f"/runs/{ui_runs.baseline}/rows/{N_ROWS}").status_code == 404
    assert client.get("/api/runs/nope/distributions").json() == {"error": "no run 'nope' in this store"}
    assert client.get("/compare", params={"a": "nope", "b": ui_runs.baseline}).status_code == 404


def test_comparison_page_shows_verdicts_and_changed_rows(client: TestClient, ui_runs: UIRuns) -> None:
    page = client.get("/compare", params={"a": ui_runs.baseline, "b": ui_runs.candidate}).text
    assert "f1.f1_score" in page and "B − A" in page
    api = client.get("/api/compare", params={"a": ui_runs.baseline, "b": ui_runs.candidate}).json()
    f1 = next(m for m in api["comparison"]["metrics"] if m["metric"] == "f1.f1_score")
    assert f1["difference"] < 0 and f1["n_pairs"] == N_ROWS
    assert f'badge {f1["verdict"].replace(" ", "-")}' in page
    assert api["changed"] and all(c["difference"] != 0 for c in api["changed"])
    assert page.count("<pre>") >= 2 * len(api["changed"])  # both sides of each changed row


def test_trends_and_distributions_api(client: TestClient, ui_runs: UIRuns) -> None:
    trend = client.get("/api/trends", params={"metric": "f1.f1_score"}).json()
    assert {p["run_id"] for p in trend["points"]} == {ui_runs.baseline, ui_runs.candidate}
    page = client.get("/trends", params={"metric": "f1.f1_score"}).text
    assert 'data-chart="trend"' in page and page.count('<td class="key">f1.f1_score</td>') == 2
    dist = client.get(f"/api/runs/{ui_runs.judged}/distributions").json()["metrics"]
    assert {d["key"] for d in dist} >= {"faithfulness.faithfulness", "coherence.coherence"}


def test_a_run_still_running_has_pages_without_a_summary(tmp_path: Path) -> None:
    """A run with scores but no summary yet (running, or stopped early): its metrics come from the
    typed score lines; the pages say there is no summary."""
    store = RunStore(tmp_path / "runs.db")
    run_id = store.create_run({"evaluators": {"f1": {"metric": "f1_score"}}}, "half done", "test")
    store.put_rows(run_id, [StoredRow(i, None, None, {"response": f"r{i}"}, None, None) for i in range(3)])
    store.put_scores(run_id, "f1", [
        ScoreRecord(i, {"f1_score": i / 2}, False, None,
                    [score_line("f1_score", i / 2, None, "ok", None, None)])
        for i in range(3)
    ])
    with TestClient(create_app(store)) as c:
        page = c.get(f"/runs/{run_id}")
        assert page.status_code == 200 and "did not finish" in page.text
        assert c.get(f"/api/runs/{run_id}").json()["metric_keys"] == ["f1.f1_score"]
        rows = c.get(f"/api/runs/{run_id}/rows", params={"metric": "f1_score", "min": "0.5"}).json()
        assert rows["total"] == 2
        dist = c.get(f"/api/runs/{run_id}/distributions").json()["metrics"]
        assert [(d["key"], d["n"]) for d in dist] == [("f1.f1_score", 3)]
        assert c.get("/runs").status_code == 200
    store.close()
