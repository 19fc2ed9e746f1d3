"""Monitor alerts on the trends page: what ``touchstone monitor`` appended to its ``alerts.jsonl`` (the
monitor's own file sink writes them here) is marked on the window's point, for its metric only, with
the method that decided it; a torn or damaged line is skipped, and alert text is data, never markup."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from touchstone.monitor.alerts import Alert
from touchstone.monitor.sinks import FileSink
from touchstone.store import RunStore
from touchstone.ui import create_app
from touchstone.ui.monitor_alerts import alerts_for, default_monitor_dirs, load_alerts

HOSTILE_METHOD = "Welch <script>window.__pwned=1</script>, alpha=0.01"


def _windows(store: RunStore) -> dict[str, str]:
    config = {"evaluators": {"f1": {"metric": "f1_score", "options": {"threshold": 0.3}},
                             "bleu": {"metric": "bleu_score", "options": {"threshold": 0.1}}}}
    ids = {}
    for start, mean in {"2026-01-01T10:00:00Z": 0.7, "2026-01-01T11:00:00Z": 0.5}.items():
        run_id = store.create_run(config, f"monitor:shop:{start}", "test")
        entry = {"n": 10, "n_failed": 0, "mean": mean, "ci95": [mean - 0.1, mean + 0.1],
                 "higher_is_better": True}
        summary = {"f1.f1_score": entry, "bleu.bleu_score": entry}
        store.finish_run(run_id, "completed", {}, {"summary": summary})
        ids[start] = run_id
    return ids


def test_alerts_are_marked_on_their_window_and_metric(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    ids = _windows(store)
    late = ids["2026-01-01T11:00:00Z"]
    sink = FileSink(tmp_path / "monitors" / "shop" / "alerts.jsonl")
    sink.send([Alert(monitor="shop", window_start="2026-01-01T11:00:00Z", window_end="2026-01-01T12:00:00Z",
                     metric="f1_score", kind="regression", method=HOSTILE_METHOD, value=0.5, reference=0.7,
                     n=10, run_id=late, p_value=0.004, baseline_n=10, baseline_windows=1)])
    with (tmp_path / "monitors" / "shop" / "alerts.jsonl").open("a") as fh:
        fh.write('{"run_id": "torn", "kind": \n')  # a line cut by a crash is skipped
    assert default_monitor_dirs(store.path, store.persistent) == [tmp_path / "monitors"]
    assert list(load_alerts([tmp_path / "monitors"])) == [late]

    with TestClient(create_app(store)) as client:
        f1 = client.get("/api/trends", params={"metric": "f1_score"}).json()["points"]
        early = ids["2026-01-01T10:00:00Z"]
        assert [(p["run_id"], p["alerted"]) for p in f1] == [(early, False), (late, True)]
        alert = f1[1]["alerts"][0]
        assert alert["kind"] == "regression" and alert["method"] == HOSTILE_METHOD
        assert alert["p_value"] == 0.004
        bleu = client.get("/api/trends", params={"metric": "bleu_score"}).json()["points"]
        assert not any(p["alerted"] for p in bleu)  # another metric of the same window: no alert
        page = client.get("/trends", params={"metric": "f1_score"}).text
        assert "alert: regression" in page and "<script>window.__pwned" not in page
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    # a folder given explicitly, and one that does not exist, are both fine
    with TestClient(create_app(store, monitor_dirs=[tmp_path / "nowhere"])) as client:
        points = client.get("/api/trends", params={"metric": "f1_score"}).json()["points"]
        assert not any(p["alerted"] for p in points)
    store.close()


def test_alerts_for_matches_a_metric_name_or_key() -> None:
    alerts = {"r1": [{"metric": "f1.f1_score"}, {"metric": "bleu_score"}, {"metric": "x.f1_score"}]}
    assert len(alerts_for(alerts, "r1", "f1.f1_score", "f1_score")) == 2
    assert alerts_for(alerts, "r2", "f1.f1_score", "f1_score") == []
    assert alerts_for(alerts, "r1", "bleu.bleu_score", "bleu_score") == [{"metric": "bleu_score"}]
