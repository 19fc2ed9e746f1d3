"""touchstone presets, and touchstone eval's --preset (dropping metrics with a message), --max-tier,
--dry-run tables per metric and tier, --pricing, --sample/--budget/--strategy (rows and strategy stored
with the run, never over the budget, estimate vs actual in the summary and in touchstone show) against
the loopback fake judge."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from touchstone.cli import app
from touchstone.store.sqlite import RunStore

runner = CliRunner()
JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY",
             "AZURE_OPENAI_DEPLOYMENT", "TOUCHSTONE_JUDGE_MODEL", "TOUCHSTONE_PRICES")
KEY = {"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}


@pytest.fixture(autouse=True)
def _no_judge_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


def _data(tmp_path: Path, n: int = 12, **drop: bool) -> Path:
    rng = random.Random(n)
    rows = []
    for i in range(n):
        row: dict[str, Any] = {
            "id": f"r{i}", "query": f"What does item {i} do?",
            "context": f"Item {i} " + "charges fast and lasts long. " * rng.randint(1, 20),
            "response": "It charges fast." * rng.randint(1, 4), "group": "ab"[i % 2],
        }
        rows.append({k: v for k, v in row.items() if not drop.get(k)})
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _eval(fake: FakeOpenAIServer, tmp_path: Path, data: Path, *args: str) -> Any:
    args = ("--store", str(tmp_path / "runs.db"), "-q", "--no-cache", *args)
    return runner.invoke(app, ["eval", str(data), "--judge-model", "gpt-4o-mini", "--judge-base-url",
                               fake.base_url, *args], env=KEY)


def test_presets_command_lists_every_preset_and_resolves_on_data(tmp_path: Path) -> None:
    result = runner.invoke(app, ["presets", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [p["name"] for p in doc["presets"]] == [
        "question-answering", "document-search", "chatbot", "summarization", "rag", "development",
        "pre-production", "production", "ab-test"]
    assert doc["tiers"] == ["free", "low", "medium", "high"]
    data = _data(tmp_path, context=True)
    result = runner.invoke(app, ["presets", str(data), "--preset", "summarization", "--json"])
    assert result.exit_code == 0, result.output
    (plan,) = json.loads(result.output)
    assert plan["metrics"] == ["conciseness"]
    assert {d["metric"] for d in plan["dropped"]} == {"faithfulness", "completeness"}
    assert all("context" in d["reason"] for d in plan["dropped"])
    bad = runner.invoke(app, ["presets", "--preset", "summarisation"])
    assert bad.exit_code == 2 and "unknown preset 'summarisation'" in bad.output


def test_preset_drops_a_metric_with_a_message_and_runs_the_rest(fake_openai: FakeOpenAIServer,
                                                                 tmp_path: Path) -> None:
    data = _data(tmp_path, 4, context=True)
    result = _eval(fake_openai, tmp_path, data, "--preset", "summarization")
    assert result.exit_code == 0, result.output
    assert "preset summarization: dropped faithfulness: needs the column(s)" in result.output
    assert "conciseness" in result.output
    assert fake_openai.count == 4


def test_dry_run_per_metric_and_tier_with_max_tier(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    data = _data(tmp_path, 5)
    result = _eval(fake_openai, tmp_path, data, "--preset", "summarization", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "estimate per metric" in result.output and "estimate per cost tier" in result.output
    assert "15 judge calls" in result.output
    limited = _eval(fake_openai, tmp_path, data, "--preset", "summarization", "--dry-run",
                    "--max-tier", "low")
    assert limited.exit_code == 0, limited.output
    assert "--max-tier: dropped faithfulness: cost tier medium is above --max-tier low" in limited.output
    assert "5 judge calls" in limited.output
    assert fake_openai.count == 0
    bad = _eval(fake_openai, tmp_path, data, "--metrics", "coherence", "--max-tier", "cheap")
    assert bad.exit_code == 2 and "unknown tier 'cheap'" in bad.output


def test_budget_run_stores_rows_and_estimate_and_show_prints_them(fake_openai: FakeOpenAIServer,
                                                                  tmp_path: Path) -> None:
    data = _data(tmp_path, 12)
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o-mini: {input: 100.0, output: 100.0}\n")
    budget = 0.9
    result = _eval(fake_openai, tmp_path, data, "--metrics", "coherence,conciseness", "--pricing",
                   str(prices), "--budget", str(budget), "--strategy", "diverse", "--stratify-by", "group",
                   "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "sample:" in result.output and "estimate vs actual" in result.output
    store = RunStore(tmp_path / "runs.db")
    (info,) = store.list_runs()
    sampling = info.config["options"]["sampling"]
    assert sampling["strategy"] == "diverse" and sampling["seed"] == 3
    assert sampling["estimated_cost"] <= budget
    assert set(sampling["strata"]) == {"a", "b"}
    chosen = len(sampling["row_ids"])
    assert 0 < chosen < 12
    assert fake_openai.count == 2 * chosen
    estimate = info.summary["estimate"] if info.summary else {}
    assert estimate["total"]["calls"] == {"estimated": 2.0 * chosen, "actual": 2.0 * chosen, "error": 0.0}
    assert estimate["total"]["cost_usd"]["estimated"] <= budget
    shown = runner.invoke(app, ["show", info.id, "--store", str(tmp_path / "runs.db")])
    assert shown.exit_code == 0, shown.output
    assert "estimate vs actual" in shown.output and f"sample: {chosen} of 12 rows" in shown.output
    as_json = json.loads(runner.invoke(app, ["show", info.id, "--store", str(tmp_path / "runs.db"),
                                             "--json"]).output)
    assert as_json["estimate"]["total"]["calls"]["actual"] == 2.0 * chosen
    # the same rows again, for a paired comparison
    fake_openai.reset()
    again = _eval(fake_openai, tmp_path, data, "--metrics", "conciseness", "--rows-of", info.id)
    assert again.exit_code == 0, again.output
    latest = store.list_runs(limit=1)[0]
    assert latest.config["options"]["sampling"]["row_ids"] == sampling["row_ids"]
    assert fake_openai.count == chosen
    # resuming a sampled run continues on its rows; another sample with --resume is refused
    fake_openai.reset()
    resumed = _eval(fake_openai, tmp_path, data, "--resume", info.id)
    assert resumed.exit_code == 0, resumed.output
    assert fake_openai.count == 0  # every row of the sample is already scored
    refused = _eval(fake_openai, tmp_path, data, "--resume", info.id, "--sample", "2")
    assert refused.exit_code == 2 and "a resumed run keeps its own rows" in refused.output


def test_budget_without_a_price_and_difficult_after_a_run(fake_openai: FakeOpenAIServer,
                                                          tmp_path: Path) -> None:
    data = _data(tmp_path, 6)
    result = runner.invoke(app, ["eval", str(data), "--metrics", "coherence", "--judge-model",
                                 "no-such-model", "--judge-base-url", fake_openai.base_url,
                                 "--store", str(tmp_path / "runs.db"), "--budget", "1"], env=KEY)
    assert result.exit_code == 2 and "--pricing" in result.output
    assert fake_openai.count == 0
    first = _eval(fake_openai, tmp_path, data, "--metrics", "coherence", "--threshold", "coherence=5")
    assert first.exit_code == 0, first.output  # the fake rates 4: every row below 5
    picked = _eval(fake_openai, tmp_path, data, "--metrics", "coherence", "--sample", "2", "--strategy",
                   "difficult")
    assert picked.exit_code == 0, picked.output
    assert "difficult: 6 rows failed, scored low or were disputed in 1 earlier run(s)" in picked.output


def test_preset_with_nothing_left_says_why(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    data = _data(tmp_path, 3)
    result = _eval(fake_openai, tmp_path, data, "--preset", "document-search")
    assert result.exit_code == 2
    assert "no metric applies to these columns: ranking: needs the column(s)" in result.output
    added = _eval(fake_openai, tmp_path, data, "--preset", "document-search", "--metrics", "conciseness")
    assert added.exit_code == 0, added.output  # --metrics still runs
    assert fake_openai.count == 3
