"""A replayed stream of interactions over five hourly windows with a quality drop planted in the
last: exactly the expected alerts (threshold and Welch regression, for a judge metric on the fake
server and a lexical metric), windows stored as runs, the webhook and the OTLP export receiving them,
and ``touchstone monitor --once`` exiting 1."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest
from tests.monitor.conftest import Receiver
from touchstone.cli.app import app
from touchstone.engine.planning import JudgeChoice, plan_evaluation
from touchstone.monitor.export import EvaluationExporter
from touchstone.monitor.service import Monitor, MonitorConfig
from touchstone.monitor.sinks import LogSink, WebhookSink
from touchstone.monitor.sources.jsonl import DirectoryTail
from touchstone.monitor.state import MonitorState
from touchstone.monitor.store import stored_windows
from touchstone.store import RunStore

GOOD = "The Trailglow 300 runs longest, 40 hours on high."
PARTLY = "The Trailglow 300 I think."
BAD = "Sorry, I cannot help with lanterns today."
TRUTH = "The Trailglow 300 runs longest, 40 hours on high."
WINDOWS = 5
PER_WINDOW = 12


def stream() -> list[dict[str, Any]]:
    """Five hours of interactions: the first four mostly good (one partly right answer an hour), the
    fifth mostly bad (the planted drop)."""
    rows = []
    for hour in range(WINDOWS):
        for i in range(PER_WINDOW):
            if hour < WINDOWS - 1:
                response = PARTLY if i == hour % PER_WINDOW else GOOD
            else:
                response = GOOD if i < 2 else BAD
            rows.append(
                {
                    "id": f"h{hour}-{i}",
                    "timestamp": f"2025-05-01T{8 + hour:02d}:{i * 4:02d}:30Z",
                    "query": "Which lantern lasts longest on one charge?",
                    "response": response,
                    "ground_truth": TRUTH,
                }
            )
    return rows


def judge(fake: FakeOpenAIServer) -> None:
    """Coherence 5 for the lantern answers, 1 for the evasive one."""

    def handler(req: FakeRequest) -> str:
        text = json.dumps(req.messages)
        return json.dumps({"reason": "checked", "score": 1 if "cannot help" in text else 5})

    fake.handler = handler


def write_stream(directory: Path, rows: list[dict[str, Any]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    half = len(rows) // 2  # two files, the second starting mid-stream
    (directory / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:half]))
    (directory / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[half:]))


EXPECTED = {
    ("2025-05-01T12:00:00Z", "coherence", "threshold"),
    ("2025-05-01T12:00:00Z", "coherence", "regression"),
    ("2025-05-01T12:00:00Z", "f1_score", "threshold"),
    ("2025-05-01T12:00:00Z", "f1_score", "regression"),
}


def test_planted_drop_raises_exactly_the_expected_alerts(
    tmp_path: Path, fake_openai: FakeOpenAIServer, receiver: Receiver
) -> None:
    judge(fake_openai)
    write_stream(tmp_path / "src", stream())
    plan = plan_evaluation(
        ["coherence", "f1_score"],
        {"coherence": 3.0, "f1_score": 0.5},
        {},
        judge=JudgeChoice("fake-judge", fake_openai.base_url),
    )
    store = RunStore(tmp_path / "runs.db")
    logged: list[str] = []
    receiver.fail_first = 1  # the webhook's first attempt fails: the retry delivers
    webhook = WebhookSink(
        f"http://hook-user:s3cret-token@{receiver.url[len('http://') :]}/alerts", backoff=0.01
    )
    config = MonitorConfig("shop", 3600, thresholds={"coherence": 3.0, "f1_score": 0.5}, baseline=3)
    exporter = EvaluationExporter(receiver.url)
    monitor = Monitor(
        config,
        plan,
        store,
        MonitorState(tmp_path / "state"),
        [LogSink(logged.append), webhook],
        exporter=exporter,
    )
    monitor.tail(DirectoryTail(tmp_path / "src"))
    reports = monitor.evaluate_due(everything=True)

    assert [r.n for r in reports] == [PER_WINDOW] * WINDOWS
    got = {(a.window_start, a.metric, a.kind) for r in reports for a in r.alerts}
    assert got == EXPECTED
    assert sum(len(r.alerts) for r in reports) == len(EXPECTED)
    for alert in (a for r in reports for a in r.alerts if a.kind == "regression"):
        assert (
            alert.method.startswith("Welch's t-test") and alert.p_value is not None and alert.p_value < 0.01
        )
        assert alert.baseline_windows == 3 and alert.baseline_n == 3 * PER_WINDOW
    coherence = reports[-1].summary["coherence.coherence"]
    assert coherence["mean"] == pytest.approx((2 * 5 + 10 * 1) / 12)

    # stored: one run per window, named after it, with its rows' scores
    windows = stored_windows(store, "shop")
    assert [w.run_id for w in windows] == [r.run_id for r in reports]
    assert windows[-1].summary["f1_score.f1_score"] == reports[-1].summary["f1_score.f1_score"]
    run = store.get_run(reports[-1].run_id)
    assert run is not None and run.name == "monitor:shop:2025-05-01T12:00:00Z"
    assert run.config["options"]["monitor"]["window_end"] == "2025-05-01T13:00:00Z"
    assert len(store.score_values(reports[-1].run_id, evaluator="f1_score", metric="f1_score")) == PER_WINDOW

    # sinks: the log, the webhook (one POST per window with alerts, after one retry), the state file
    assert len(logged) == 4 and all(line.startswith("ALERT monitor shop") for line in logged)
    hooks = [r for r in receiver.requests if r.path == "/alerts"]
    assert len(hooks) == 1 and {a["kind"] for a in hooks[0].body["alerts"]} == {"threshold", "regression"}
    assert hooks[0].headers["Authorization"].startswith("Basic ")
    assert "s3cret-token" not in json.dumps(hooks[0].body) and "s3cret" not in webhook.shown

    # OTLP export: one gen_ai.evaluation.result per row and metric
    records = [
        rec
        for r in receiver.requests
        if r.path == "/v1/logs"
        for rl in r.body["resourceLogs"]
        for sl in rl["scopeLogs"]
        for rec in sl["logRecords"]
    ]
    assert len(records) == WINDOWS * PER_WINDOW * 2
    attrs = {a["key"]: a["value"] for a in records[0]["attributes"]}
    assert records[0]["eventName"] == "gen_ai.evaluation.result"
    assert set(attrs) >= {
        "gen_ai.evaluation.name",
        "gen_ai.evaluation.score.value",
        "gen_ai.evaluation.score.label",
    }


def test_once_cli_exits_1_on_alerts_and_0_when_quiet(
    tmp_path: Path, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    judge(fake_openai)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    rows = stream()
    write_stream(tmp_path / "src", rows[: (WINDOWS - 1) * PER_WINDOW])  # the good hours only
    args = [
        "monitor",
        str(tmp_path / "src"),
        "-m",
        "coherence,f1_score",
        "--window",
        "1h",
        "--threshold",
        "coherence=3",
        "--threshold",
        "f1_score=0.5",
        "--baseline",
        "3",
        "--once",
        "--store",
        str(tmp_path / "runs.db"),
        "--judge-model",
        "fake-judge",
        "--judge-base-url",
        fake_openai.base_url,
        "-q",
    ]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    # the next hour arrives (appended to a new file); a second run reads only it
    with (tmp_path / "src" / "c.jsonl").open("w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows[(WINDOWS - 1) * PER_WINDOW :])
    with caplog.at_level(logging.WARNING):
        second = CliRunner().invoke(app, args)
    assert second.exit_code == 1, second.output
    assert second.output.count("regressed from the baseline") == 2
    assert second.output.count("is past its threshold") == 2
    assert "received 12, kept 12" in second.output
    store = RunStore(tmp_path / "runs.db")
    assert len(stored_windows(store, "src")) == WINDOWS
    alerts = (tmp_path / "monitors" / "src" / "alerts.jsonl").read_text().splitlines()
    assert len(alerts) == 4
