"""The dashboard in a real browser: headless Chromium (Debian's, through Playwright) against the app
served by uvicorn on a free loopback port (one server and one browser for this module). The pages
load and draw their charts, filters and pagination work, a comparison renders, and no hostile string
from the runs (responses, judge reasons, claims, run and column names) runs anything: no dialog, no
``window.__pwned``, no Content-Security-Policy violation (nothing even tried to run), and each string
is shown as text."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.ui.conftest import HOSTILE, HOSTILE_COLUMN, HOSTILE_RUN_NAME, N_ROWS, UIRuns, Watched, _row_indices

from touchstone.ui import create_app


@dataclass
class Served:
    base: str
    runs: UIRuns


@pytest.fixture(scope="module")
def served(ui_runs: UIRuns) -> Iterator[Served]:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(create_app(ui_runs.store), host="127.0.0.1", port=0,
                                           log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True, name="ui-test-server")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the dashboard did not start"
        assert thread.is_alive(), "the dashboard's server stopped"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(f"http://127.0.0.1:{port}", ui_runs)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_runs_page_lists_runs_and_leads_to_a_run_with_charts(served: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(served.base + "/runs")
    assert page.locator("tr.run").count() == 4
    page.get_by_role("link", name=served.runs.baseline).click()
    page.wait_for_url(f"**/runs/{served.runs.baseline}")
    assert page.locator("h1 .run-id").inner_text() == served.runs.baseline
    assert page.locator("table.summary tbody tr").count() == 5
    page.wait_for_selector('[data-chart="distributions"][data-rendered="true"]')
    assert page.locator("figure.chart canvas").count() == 5
    # Chart.js drew on every canvas (a chart instance is attached to it)
    assert page.evaluate("[...document.querySelectorAll('figure.chart canvas')]"
                         ".every(c => Chart.getChart(c))")
    watched.assert_nothing_ran()


def test_runs_filters(served: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(served.base + "/runs")
    page.fill("#run-filters input[name=name]", "cand")
    page.click("#run-filters button[type=submit]")
    page.wait_for_url("**name=cand**")
    assert page.locator("a.run-link").all_inner_texts() == [served.runs.candidate]
    page.goto(served.base + "/runs")
    page.fill("#run-filters input[name=metric]", "faithfulness")
    page.click("#run-filters button[type=submit]")
    page.wait_for_url("**metric=faithfulness**")
    assert page.locator("a.run-link").all_inner_texts() == [served.runs.judged]
    page.select_option("#run-filters select[name=status]", "completed_with_failures")
    page.fill("#run-filters input[name=metric]", "")
    page.click("#run-filters button[type=submit]")
    assert page.locator("a.run-link").all_inner_texts() == [served.runs.judged]
    watched.assert_nothing_ran()


def test_row_table_filters_and_pagination(served: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(f"{served.base}/runs/{served.runs.baseline}?size=25")
    assert _row_indices(page) == list(range(25))
    page.click("nav.pager a.next")
    assert _row_indices(page) == list(range(25, N_ROWS))
    assert page.locator("nav.pager a.next").count() == 0
    page.click("nav.pager a.prev")
    assert _row_indices(page) == list(range(25))
    # a score range on one metric, ordered by its value, worst first
    page.select_option("#row-filters select[name=metric]", "f1.f1_score")
    page.fill("#row-filters input[name=max]", "0.9")
    page.select_option("#row-filters select[name=sort]", "value")
    page.click("#row-filters button[type=submit]")
    page.wait_for_url("**max=0.9**")
    cells = page.locator("table.rows tbody tr td.score").all()
    assert cells, "the filter kept no row"
    values = [float(t) for t in page.locator("table.rows tbody tr").evaluate_all(
        "rows => rows.map(r => r.querySelectorAll('td.score')[0].textContent)")]
    assert values == sorted(values) and max(values) <= 0.9
    # text search, then a column filter
    page.goto(f"{served.base}/runs/{served.runs.baseline}")
    page.fill("#row-filters input[name=q]", "ANSWER NUMBER 7 ")
    page.click("#row-filters button[type=submit]")
    assert _row_indices(page) == [7]
    page.goto(f"{served.base}/runs/{served.runs.baseline}")
    page.select_option("#row-filters select[name=column]", "topic")
    page.fill("#row-filters input[name=value]", "colours")
    page.click("#row-filters button[type=submit]")
    assert _row_indices(page) == list(range(1, N_ROWS, 2))
    page.goto(f"{served.base}/runs/{served.runs.judged}")
    page.select_option("#row-filters select[name=status]", "failed")
    page.click("#row-filters button[type=submit]")
    assert _row_indices(page) == [4, 9]
    page.click("a.row-link >> nth=0")
    page.wait_for_url(f"**/runs/{served.runs.judged}/rows/4")
    assert "JudgeReplyError" in page.locator("table.reasons").first.inner_text()
    watched.assert_nothing_ran()


def test_comparison_renders_from_the_runs_page(served: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(served.base + "/runs")
    page.check(f'input[name=a][value="{served.runs.baseline}"]')
    page.check(f'input[name=b][value="{served.runs.candidate}"]')
    page.click("#compare-form button[type=submit]")
    page.wait_for_url("**/compare?**")
    rows = page.locator("table.comparison tbody tr")
    assert rows.count() >= 5
    f1 = page.locator("table.comparison tbody tr", has_text="f1.f1_score")
    assert f1.locator(".badge").inner_text() in ("worse", "no detectable difference")
    assert page.locator("table.changed tbody tr").count() > 0
    watched.assert_nothing_ran()


def test_trend_chart(served: Served, watched: Watched) -> None:
    page = watched.page
    page.goto(served.base + "/trends")
    page.fill("#trend-filters input[name=metric]", "f1.f1_score")
    page.click("#trend-filters button[type=submit]")
    page.wait_for_selector('[data-chart="trend"][data-rendered="true"]')
    assert page.evaluate("Chart.getChart(document.querySelector('[data-chart=trend] canvas')).data.datasets"
                         ".map(d => d.label)") == ["mean", "95% low", "95% high", "threshold"]
    assert page.locator("table.trend tbody tr").count() == 2
    watched.assert_nothing_ran()


def test_hostile_strings_execute_nothing_and_show_as_text(served: Served, watched: Watched) -> None:
    page = watched.page
    runs = served.runs
    urls = ["/runs", f"/runs/{runs.judged}", f"/runs/{runs.baseline}", f"/runs/{runs.chat}/rows/0",
            f"/compare?a={runs.baseline}&b={runs.candidate}", "/trends?metric=coherence",
            f"/runs/{runs.judged}?q=%3Cscript%3E"]
    urls += [f"/runs/{runs.judged}/rows/{i}" for i in range(12)]
    urls += [f"/runs/{runs.baseline}/rows/{i}" for i in (3, 11, 19, 27, 35, 43)]
    for url in urls:
        page.goto(served.base + url)
        page.wait_for_load_state("load")
        for box in page.locator("[data-chart]").all():
            page.wait_for_function("b => b.dataset.rendered", arg=box.element_handle())
        # move over and focus every element: an injected onmouseover or onfocus would fire
        page.evaluate("""() => document.querySelectorAll('body *').forEach(e => {
            for (const kind of ['mouseover', 'mouseenter', 'focus']) e.dispatchEvent(new Event(kind));
        })""")
        watched.assert_nothing_ran()
    page.goto(served.base + "/runs")
    assert HOSTILE_RUN_NAME in page.locator("td.name").all_inner_texts()
    page.goto(f"{served.base}/runs/{runs.baseline}")
    assert HOSTILE_COLUMN in page.locator("#row-filters select[name=column] option").all_inner_texts()
    page.select_option("#row-filters select[name=column]", HOSTILE_COLUMN)  # filtering by it works too
    page.fill("#row-filters input[name=value]", "<svg><script>")
    page.click("#row-filters button[type=submit]")
    assert _row_indices(page) == [i for i in range(N_ROWS) if HOSTILE[i % len(HOSTILE)] == HOSTILE[3]]
    page.goto(f"{served.base}/runs/{runs.judged}/rows/0")
    evidence = page.locator("table.evidence").inner_text()
    assert HOSTILE[0] in evidence and HOSTILE[1] in evidence and HOSTILE[4] in evidence
    assert HOSTILE[2] + " and " + HOSTILE[6] in page.locator("table.reasons").first.inner_text()
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator("img, svg, iframe").count() == 0
    page.goto(f"{served.base}/runs/{runs.baseline}/rows/11")
    assert "{{7*7}}" in page.locator("table.inputs").inner_text()
    watched.assert_nothing_ran()


def test_the_payloads_would_run_if_they_were_markup(browser: Any) -> None:
    """The control: outside the dashboard (no escaping, no CSP) the same strings do run, so the
    checks above would see them."""
    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        page.set_content(HOSTILE[1])
        page.wait_for_function("window.__pwned === 1")
        page.set_content(HOSTILE[0])
        assert dialogs == ["2", "1"]  # HOSTILE[1]'s alert, then HOSTILE[0]'s
    finally:
        context.close()
