"""User feedback on the dashboard in headless Chromium (the conftest's browser; the app served by
uvicorn on a free loopback port over a store of its own): choosing a feedback filter in the run
page's form shows exactly the planted rows, their feedback column shows a user's hostile error
report as text without running it, and the compare page restricted to rows with feedback says how
many remain."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from tests.ui.conftest import HOSTILE, Watched, _row_indices
from tests.ui.test_feedback_filter import PLANTED, REPORT, FeedbackRuns, plant

from touchstone.store import open_store
from touchstone.ui import create_app


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FeedbackRuns]]:
    import uvicorn

    store = open_store(str(tmp_path_factory.mktemp("feedback-browser") / "runs.db"))
    runs = plant(store)
    server = uvicorn.Server(uvicorn.Config(create_app(store), host="127.0.0.1", port=0, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True, name="feedback-ui-server")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the dashboard did not start"
        assert thread.is_alive(), "the dashboard's server stopped"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", runs
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        store.close()


def test_the_feedback_filter_in_the_browser(served: tuple[str, FeedbackRuns], watched: Watched) -> None:
    base, runs = served
    page = watched.page
    page.goto(f"{base}/runs/{runs.a}?size=100")
    assert len(_row_indices(page)) == 30
    form = page.locator("#row-filters")
    form.locator("select[name=feedback]").select_option("failure")
    with page.expect_navigation():
        form.locator("button[type=submit]").click()
    assert _row_indices(page) == [3, 5, 11, 20]
    assert "feedback=failure" in page.url
    # the feedback column: counts, the mean rating and the report, shown as the text the user typed
    cells = page.locator("td.feedback").all_inner_texts()
    assert "thumbs down 1" in cells[0] and "rating 2.5" in cells[2]
    assert REPORT in page.locator("td.feedback .report").inner_text()
    assert page.locator("td.feedback script, td.feedback img").count() == 0
    watched.assert_nothing_ran()

    form = page.locator("#row-filters")
    form.locator("select[name=feedback]").select_option("")
    form.locator("input[name=rating_max]").fill("2.5")
    with page.expect_navigation():
        form.locator("button[type=submit]").click()
    assert _row_indices(page) == [5, 11]

    form = page.locator("#row-filters")
    form.locator("input[name=rating_max]").fill("")
    form.locator("select[name=feedback]").select_option("none")
    with page.expect_navigation():
        form.locator("button[type=submit]").click()
    shown = _row_indices(page)
    assert shown == [i for i in range(30) if f"q{i}" not in PLANTED]
    assert page.locator("td.feedback.none").count() == len(shown)
    watched.assert_nothing_ran()


def test_the_comparison_restricted_by_feedback_in_the_browser(served: tuple[str, FeedbackRuns],
                                                             watched: Watched) -> None:
    base, runs = served
    page = watched.page
    page.goto(f"{base}/compare?a={runs.a}&b={runs.b}")
    assert "30 rows matched" in page.locator(".compare-head").inner_text()
    form = page.locator("#compare-filters")
    form.locator("select[name=feedback]").select_option("any")
    with page.expect_navigation():
        form.locator("button[type=submit]").click()
    assert "5 of 30 matched rows remain" in page.locator("p.restricted").inner_text()
    assert "5 rows matched" in page.locator(".compare-head").inner_text()
    assert page.locator("table.comparison td.num").first.inner_text() == "5"
    assert HOSTILE[0] not in page.content()  # the report is not on this page, and nothing of it ran
    watched.assert_nothing_ran()
