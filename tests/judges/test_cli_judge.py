"""The judge options of ``touchstone eval``: --dry-run calls nothing, a bad key stops the run with one
message, --resume finishes an interrupted run as it was started, --no-cache and --concurrency reach
the judge session."""

from __future__ import annotations

import _thread
import json
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply, judge_handler
from typer.testing import CliRunner

from touchstone import RunStore, evaluate
from touchstone.cli import app
from touchstone.evaluators import registry
from touchstone.judges import OpenAIModelConfiguration

KEY = "sk-test-cli-secret-000000000000"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    with path.open("w") as fh:
        for i in range(12):
            fh.write(json.dumps({"query": f"q{i}", "context": f"Lantern {i} runs {i} hours.",
                                 "response": f"Lantern {i} runs {i} hours."}) + "\n")
    return path


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["eval", *args, "--quiet"], catch_exceptions=False)


def judge_args(server: FakeOpenAIServer, store: Path) -> list[str]:
    return ["-m", "groundedness", "--judge-model", "fake-judge", "--judge-base-url", server.base_url,
            "--store", str(store)]


def test_dry_run(
    fake_openai: FakeOpenAIServer, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    result = cli(str(data), *judge_args(fake_openai, tmp_path / "runs.db"), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "12 judge calls" in result.output and "tokens" in result.output
    assert fake_openai.count == 0 and not (tmp_path / "runs.db").exists()


def test_bad_key_stops_with_one_message(
    fake_openai: FakeOpenAIServer, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_openai.handler = lambda r: Reply(status=401, error=f"Incorrect API key provided: {KEY}")
    result = cli(
        str(data), *judge_args(fake_openai, tmp_path / "runs.db"), "--concurrency", "2", "--no-cache"
    )
    assert result.exit_code != 0
    assert result.output.count("authentication failed") == 1 and KEY not in result.output
    assert fake_openai.count <= 2


def test_resume_finishes_an_interrupted_run(
    fake_openai: FakeOpenAIServer, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = tmp_path / "runs.db"

    def interrupting(request: FakeRequest) -> Any:
        if fake_openai.count == 6:
            _thread.interrupt_main()  # Ctrl-C in the middle of the run
        return judge_handler(request)

    fake_openai.handler = interrupting
    model = OpenAIModelConfiguration(model="fake-judge", base_url=fake_openai.base_url)
    with pytest.raises(KeyboardInterrupt):
        evaluate(
            data=str(data),
            evaluators={"groundedness": registry.create("groundedness", model_config=model)},
            store=store,
            concurrency=1,
            cache=False,
        )
    (run,) = RunStore(store).list_runs()
    assert run.status == "interrupted"
    done = RunStore(store).count_scores(run.id)
    assert 0 < done < 12

    fake_openai.handler = judge_handler
    fake_openai.reset()
    # resumed from the stored configuration: no metric or judge option needed again
    result = cli(str(data), "--store", str(store), "--resume", run.id, "--no-cache")
    assert result.exit_code == 0, result.output
    assert fake_openai.count == 12 - done
    assert RunStore(store).get_run(run.id).status == "completed"  # type: ignore[union-attr]
    assert RunStore(store).count_scores(run.id) == 12


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
def test_http_transport_option(
    transport: str, fake_openai: FakeOpenAIServer, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_openai.handler = judge_handler
    store = tmp_path / "runs.db"
    result = cli(str(data), *judge_args(fake_openai, store), "--no-cache", "--http-transport", transport)
    assert result.exit_code == 0, result.output
    assert fake_openai.count == 12
    [run] = RunStore(store).list_runs()
    config = json.dumps(RunStore(store).get_run(run.id).as_dict())  # type: ignore[union-attr]
    assert f'"http_transport": "{transport}"' in config


def test_unknown_http_transport_exits_2(
    fake_openai: FakeOpenAIServer, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    result = cli(str(data), *judge_args(fake_openai, tmp_path / "runs.db"), "--http-transport", "curl")
    assert result.exit_code == 2
    assert "http_transport must be one of auto, aiohttp, httpx" in result.output
    assert fake_openai.count == 0
