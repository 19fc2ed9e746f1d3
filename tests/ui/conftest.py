"""Runs for the dashboard's tests, made with the real ``evaluate()`` into a temporary SQLite store once
per session: two lexical runs of the same rows (a baseline and a worse candidate, for comparisons),
a judged run on the loopback fake judge (reasons, claim-level evidence, failures) and a chat run
(per-turn results). Hostile strings sit in responses, judge reasons, claims, run names and column
names: the pages must show them as text and run none of them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone import CoherenceEvaluator, F1ScoreEvaluator, RougeScoreEvaluator, evaluate
from touchstone.evaluators import registry
from touchstone.store import RunStore

HOSTILE = (
    "<script>window.__pwned=1;alert(1)</script>",
    '<img src=x onerror="window.__pwned=1;alert(2)">',
    '"><svg onload="window.__pwned=1;alert(3)"></svg>',
    "<svg><script>window.__pwned=1</script></svg>",
    "javascript:window.__pwned=1;alert(4)",
    '<a href="javascript:window.__pwned=1">click me</a>',
    "</script><script>window.__pwned=1;alert(5)</script>",
    "' onmouseover='window.__pwned=1' x='",
    '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
    "<body onload=\"window.__pwned=1\">",
    "<style>body{display:none}</style><div style=\"background:url(javascript:alert(6))\">x</div>",
    "{{7*7}} {% if true %}JINJA{% endif %} ${7*7}",
    "\u2028\u2029<!-- -->]]><![CDATA[",
)
"""Strings that would run script, load something, or render a template if they were ever treated as
markup, a link or a template. Each sets ``window.__pwned`` or opens a dialog when it runs."""

HOSTILE_COLUMN = '<img src=x onerror="window.__pwned=1">'
HOSTILE_RUN_NAME = "<script>window.__pwned=1</script> run {{7*7}}"
N_ROWS = 48


@dataclass(frozen=True)
class UIRuns:
    """The session's store and the ids of its runs."""

    path: Path
    store: RunStore
    baseline: str
    candidate: str
    judged: str
    chat: str


def _lexical_rows(candidate: bool) -> list[dict[str, Any]]:
    rows = []
    for i in range(N_ROWS):
        truth = f"the answer number {i} is blue"
        if i % 8 == 3:
            response = HOSTILE[i % len(HOSTILE)]
        elif candidate and i % 3 == 0:
            response = f"something else entirely {i}"
        else:
            response = truth if i % 4 else f"the answer {i} is maybe blue"
        rows.append({"id": f"q{i}", "query": f"what is answer {i}?", "response": response,
                     "ground_truth": truth, HOSTILE_COLUMN: HOSTILE[i % len(HOSTILE)],
                     "topic": "colours" if i % 2 else "numbers"})
    return rows


def _judge_handler(req: FakeRequest) -> str:
    schema = req.json_schema or {}
    props = schema.get("properties") or {}
    if "FAIL-THIS-ROW" in req.prompt:
        return "this is not JSON at all"  # unusable even after the repair: a failed score
    if "claims" in props:
        claims = [{"claim": HOSTILE[0], "reason": HOSTILE[1], "verdict": "supported", "document": "doc-1"},
                  {"claim": "Bananas are blue.", "reason": HOSTILE[4], "verdict": "unsupported",
                   "document": ""}]
        return json.dumps({"claims": claims, "refusal": False})
    return json.dumps({"reason": HOSTILE[2] + " and " + HOSTILE[6], "score": 4})


def _judged_rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(12):
        response = HOSTILE[i % len(HOSTILE)] + " Bananas are blue."
        if i in (4, 9):
            response += " FAIL-THIS-ROW"
        rows.append({"query": f"question {i} {HOSTILE[(i + 3) % len(HOSTILE)]}", "response": response,
                     "context": "Bananas are yellow. " + HOSTILE[5]})
    return rows


def _chat_rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(4):
        rows.append({"conversation": {"messages": [
            {"role": "user", "content": f"hello {i} {HOSTILE[0]}"},
            {"role": "assistant", "content": HOSTILE[1]},
            {"role": "user", "content": "and then?"},
            {"role": "assistant", "content": HOSTILE[3]},
        ]}})
    return rows


@pytest.fixture(scope="session")
def ui_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UIRuns]:
    """The dashboard tests' store (read-only for the tests), built once."""
    folder = tmp_path_factory.mktemp("ui-store")
    path = folder / "runs.db"
    store = RunStore(path)
    lexical = {"f1": F1ScoreEvaluator(), "rouge": RougeScoreEvaluator(rouge_type="rouge1")}
    baseline = evaluate(data=_lexical_rows(False), evaluators=lexical, store=store,
                        evaluation_name="baseline").run["id"]
    candidate = evaluate(data=_lexical_rows(True), evaluators=lexical, store=store,
                         evaluation_name="candidate").run["id"]
    with FakeOpenAIServer() as fake:
        fake.handler = _judge_handler
        config = {"model": "judge", "base_url": fake.base_url, "api_key": "sk-test-ui"}
        judged = {"faithfulness": registry.create("faithfulness", model_config=config),
                  "coherence": CoherenceEvaluator(config)}
        judged_id = evaluate(data=_judged_rows(), evaluators=judged, store=store,
                             evaluation_name=HOSTILE_RUN_NAME).run["id"]
        chat = evaluate(data=_chat_rows(), evaluators={"coherence": CoherenceEvaluator(config)}, store=store,
                        evaluation_name="chat").run["id"]
    try:
        yield UIRuns(path, store, baseline, candidate, judged_id, chat)
    finally:
        store.close()


CHROMIUM = os.environ.get("TOUCHSTONE_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium through Playwright (the Debian browser: Playwright's own download fails
    here). Skipped when there is no browser, unless ``TOUCHSTONE_REQUIRE_BROWSER`` is set (``.ci/run``
    sets it): then a missing browser fails the tests instead of hiding them."""
    if not os.path.exists(CHROMIUM):
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium, or set TOUCHSTONE_CHROMIUM)"
        if os.environ.get("TOUCHSTONE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        try:
            yield b
        finally:
            b.close()


# Runs before any page script: counts CSP violations (an injected inline script or handler would be
# blocked and reported here) and keeps the page's errors.
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
  e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
"""


@dataclass
class Watched:
    """A page with everything that would show a payload running: dialogs, console errors."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def assert_nothing_ran(self) -> None:
        assert self.dialogs == []
        assert self.page.evaluate("typeof window.__pwned") == "undefined"
        assert self.page.evaluate("window.__violations") == []
        assert self.page.evaluate("window.__errors") == []
        assert self.console_errors == []


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(java_script_enabled=True)
    context.add_init_script(WATCH)
    page = context.new_page()
    page.set_default_timeout(15_000)
    w = Watched(page)

    def on_dialog(dialog: Any) -> None:
        w.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda msg: w.console_errors.append(msg.text) if msg.type == "error" else None)
    try:
        yield w
    finally:
        context.close()


def _row_indices(page: Any) -> list[int]:
    return [int(t) for t in page.locator("a.row-link").all_inner_texts()]
