"""Annotation in a real browser (headless Chromium through Playwright, the app served by uvicorn on a
loopback port): an annotator completes Likert and pairwise tasks with the keyboard only, the answers
land in the store, system names never reach the page, each annotator's order is their own and
stable (and resumes where they stopped), and hostile responses are shown as text, running nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.people.conftest import make_run
from tests.ui.conftest import HOSTILE

from touchstone.people import annotations as an
from touchstone.store import open_store
from touchstone.store.base import Store

SYSTEM_A = "SYSTEM-ALPHA-secret-name"
SYSTEM_B = "SYSTEM-BETA-secret-name"
N_ITEMS = 8
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective));
"""


@dataclass
class Served:
    base: str
    store: Store
    run_a: str
    run_b: str


def _rows(prefix: str) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "query": f"question {i}",
             "context": f"context {i} {HOSTILE[(i + 2) % len(HOSTILE)]}",
             "response": f"{prefix} {i} {HOSTILE[i % len(HOSTILE)]}"} for i in range(N_ITEMS)]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    import uvicorn

    from touchstone.ui import create_app

    store = open_store(str(Path(tmp_path_factory.mktemp("annotate")) / "runs.db"))
    run_a, run_b = make_run(store, SYSTEM_A, _rows("alpha")), make_run(store, SYSTEM_B, _rows("beta"))
    server = uvicorn.Server(uvicorn.Config(create_app(store), host="127.0.0.1", port=0, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True, name="annotate-test-server")
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the app did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(f"http://127.0.0.1:{port}", store, run_a, run_b)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        store.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    context.add_init_script(WATCH)
    p = context.new_page()
    p.set_default_timeout(15_000)
    dialogs: list[str] = []
    errors: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    p.on("dialog", on_dialog)
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        yield p
        assert dialogs == [] and errors == []
        assert p.evaluate("typeof window.__pwned") == "undefined"
        assert p.evaluate("window.__violations") == []
    finally:
        context.close()


def _open(page: Any, served: Served, task: an.Task, annotator: str) -> None:
    page.goto(f"{served.base}/annotate/{task.id}?annotator={annotator}")
    page.wait_for_selector('#annotate[data-ready="true"]')


def _saved(page: Any, count: int) -> None:
    # selectors, not page functions: the page's CSP forbids evaluating strings
    page.wait_for_selector(f'#annotate[data-saved="{count}"]', state="attached")


def _shown_item(page: Any) -> int:
    return int(page.locator("#annotate").get_attribute("data-item"))


def test_likert_with_the_keyboard_only_order_resume_and_hostile_text(served: Served, page: Any) -> None:
    task = an.create_task_from_run(served.store, served.run_a, ["fluency", "helpfulness"], name="likert")
    _open(page, served, task, "alice")
    seen = []
    for n in range(N_ITEMS):
        item = _shown_item(page)
        seen.append(item)
        # the response is shown exactly as written, as text
        assert page.locator(".response-text").inner_text() == _rows("alpha")[item]["response"]
        page.keyboard.press(str(1 + item % 5))
        _saved(page, 2 * n + 1)
        page.keyboard.press("5")
        _saved(page, 2 * n + 2)
        if n + 1 < N_ITEMS:
            page.wait_for_selector(f'#annotate:not([data-item="{item}"])', state="attached")
    assert seen == an.order_for(task.id, "alice", N_ITEMS)  # the annotator's own seeded order
    assert page.locator("#progress").inner_text().endswith(f"{N_ITEMS} of {N_ITEMS} done")
    stored = an.answers_of(served.store, task.id, "alice")
    assert len(stored) == 2 * N_ITEMS
    assert {(i, d): v for i, _, d, v in stored} == {
        **{(i, "fluency"): float(1 + i % 5) for i in range(N_ITEMS)},
        **{(i, "helpfulness"): 5.0 for i in range(N_ITEMS)}}
    assert SYSTEM_A not in page.content()

    # bob: another order; he answers two items, comes back, and resumes at the third
    _open(page, served, task, "bob")
    bob_first = _shown_item(page)
    for count in (2, 4):
        page.keyboard.press("3")
        _saved(page, count - 1)
        page.keyboard.press("3")
        _saved(page, count)
    bob = an.order_for(task.id, "bob", N_ITEMS)
    assert bob != seen and bob_first == bob[0]
    _open(page, served, task, "bob")
    assert _shown_item(page) == bob[2]
    assert "Item 3 of 8" in page.locator("#progress").inner_text()
    page.keyboard.press("p")
    assert _shown_item(page) == bob[1]
    assert page.locator(".option.chosen").count() == 2  # his earlier answers are shown
    page.keyboard.press("n")
    assert _shown_item(page) == bob[2]
    assert an.progress(served.store, task, "bob")["done"] == 2


def test_pairwise_with_the_keyboard_hides_the_systems(served: Served, page: Any) -> None:
    task = an.create_task_from_run(served.store, served.run_a, against=served.run_b, name="pairwise")
    _open(page, served, task, "carol")
    keys = ["a", "b", "t"]
    pressed: dict[int, str] = {}
    for n in range(N_ITEMS):
        item = _shown_item(page)
        texts = page.locator(".response-text").all_inner_texts()
        sides = an.sides_for(task.id, "carol", item, 2)
        assert texts == [(_rows("alpha"), _rows("beta"))[s][item]["response"] for s in sides]
        key = keys[n % 3]
        pressed[item] = key
        page.keyboard.press(key)
        _saved(page, n + 1)
        if n + 1 < N_ITEMS:
            page.wait_for_selector(f'#annotate:not([data-item="{item}"])', state="attached")
        html = page.content()
        assert SYSTEM_A not in html and SYSTEM_B not in html
    rows = {r["item"]: r for r in an.export_rows(served.store, task.id)}
    assert len(rows) == N_ITEMS
    for item, key in pressed.items():
        sides = an.sides_for(task.id, "carol", item, 2)
        want = "tie" if key == "t" else ("model_a", "model_b")[sides["ab".index(key)]]
        assert rows[item]["winner"] == want
        assert (rows[item]["model_a"], rows[item]["model_b"]) == (SYSTEM_A, SYSTEM_B)
    assert "All items done" in page.locator("#status").inner_text()
