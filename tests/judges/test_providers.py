"""Providers: one module and one registration each, usable by name from Python and from the command
line (``--judge-provider``); the dry run is a provider too; an unknown name says which are known."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from touchstone import RunStore, evaluate
from touchstone.cli import app
from touchstone.errors import RunAbortedError
from touchstone.evaluators import registry
from touchstone.judges import JudgeSettings, get_judge_client, judge_session, provider_names
from touchstone.judges.config import ProviderModelConfiguration
from touchstone.judges.protocol import JudgeClient
from touchstone.judges.providers.base import BackendBase, ChatRequest, Response
from touchstone.judges.providers.dry_run import placeholder_json
from touchstone.judges.providers.registry import register_provider

NAME = "echo-test"
SEEN: list[dict[str, Any]] = []
"""The request bodies the test provider received."""


@register_provider(NAME)
class EchoBackend(BackendBase):
    """A provider defined here with one registration: it answers every schema with its lowest value."""

    def __init__(self, config: ProviderModelConfiguration, settings: JudgeSettings) -> None:
        super().__init__(settings, host="echo.invalid")
        self.structured.fix("text")

    def chat_body(self, model: str, request: ChatRequest) -> dict[str, Any]:
        return {"model": model, "messages": request["messages"], "schema": request["json_schema"]}

    async def chat(self, body: dict[str, Any], timeout: float) -> Response:
        SEEN.append(body)
        text = placeholder_json(body["schema"]) if body["schema"] else "echo"
        return Response({
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3},
        })

    async def embed(self, model: str, texts: list[str], timeout: float) -> Response:
        return Response({"data": [{"index": i, "embedding": [float(len(t))]} for i, t in enumerate(texts)]})

    async def aclose(self) -> None:
        return None


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()


CONFIG = {"provider_name": NAME, "model": "echo-1"}
ROWS = [{"query": f"q{i}", "context": f"Lantern {i} runs {i} hours.", "response": f"It runs {i} hours."}
        for i in range(3)]


def test_a_provider_registered_in_a_test_module_is_listed_and_served_from_python() -> None:
    assert NAME in provider_names()
    client = get_judge_client(CONFIG, settings=JudgeSettings(cache=False))
    assert isinstance(client, JudgeClient)

    async def ask() -> Any:
        return await client.chat([{"role": "user", "content": "hi"}], max_tokens=5)

    reply = asyncio.run(ask())
    assert reply.text == "echo" and reply.usage.prompt_tokens == 11 and SEEN[0]["model"] == "echo-1"
    vectors = asyncio.run(client.embed(["ab", "abc"]))
    assert vectors == [[2.0], [3.0]]


def test_a_registered_provider_serves_a_run(tmp_path: Path) -> None:
    groundedness = registry.create("groundedness", model_config=CONFIG)
    result = evaluate(data=ROWS, evaluators={"g": groundedness}, store=tmp_path / "runs.db", cache=False)
    assert len(SEEN) == len(ROWS) and result.n_failed == 0
    model = result.run["judge"]["models"][0]
    assert model["provider"] == NAME and model["host"] == "echo.invalid"


def test_the_command_line_names_a_provider(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    store = tmp_path / "runs.db"
    result = CliRunner().invoke(
        app,
        ["eval", str(data), "-m", "groundedness", "--judge-provider", NAME, "--judge-model", "echo-2",
         "--store", str(store), "--no-cache", "--quiet"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert len(SEEN) == len(ROWS) and {body["model"] for body in SEEN} == {"echo-2"}
    [run] = RunStore(store).list_runs()
    assert RunStore(store).count_scores(run.id) == len(ROWS)


def test_an_unknown_provider_stops_the_run_naming_the_known_ones() -> None:
    async def ask() -> Any:
        async with judge_session(JudgeSettings(cache=False)):
            client = get_judge_client({"provider_name": "no-such-provider", "model": "m"})
            return await client.chat([{"role": "user", "content": "hi"}])

    with pytest.raises(RunAbortedError, match=r"no judge provider 'no-such-provider' \(known: .*anthropic"):
        asyncio.run(ask())


def test_the_dry_run_is_a_provider_that_sends_nothing() -> None:
    """Any configuration, even one whose provider would need a server, is answered by the dry run:
    the placeholder follows the schema and usage is estimated."""
    schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5},
                                               "verdicts": {"type": "array", "minItems": 2,
                                                            "items": {"enum": ["yes", "no"]}}}}

    async def ask() -> Any:
        async with judge_session(JudgeSettings(dry_run=True)) as session:
            client = get_judge_client(CONFIG)
            reply = await client.chat([{"role": "user", "content": "x" * 400}], json_schema=schema, n=2)
            vectors = await client.embed(["a", "b", "c"])
            return reply, vectors, dict(session.stats)

    reply, vectors, stats = asyncio.run(ask())
    assert json.loads(reply.text) == {"score": 1, "verdicts": ["yes", "yes"]} and len(reply.choices) == 2
    assert reply.structured and reply.usage.completion_tokens == 300 and reply.usage.prompt_tokens > 100
    assert vectors == [[0.0]] * 3 and stats["calls"] == 2 and SEEN == []


def test_the_named_provider_decides_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from touchstone.judges.config import model_config_from_env

    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://x.openai.azure.com")
    assert "azure_endpoint" in model_config_from_env("dep")  # the environment picks Azure...
    assert model_config_from_env("m", provider="openai") == {"model": "m"}  # ...unless OpenAI is named
    azure: dict[str, Any] = dict(model_config_from_env("dep", provider="azure_openai"))
    assert azure["azure_endpoint"] == "https://x.openai.azure.com"
    assert model_config_from_env("c", base_url="http://h", provider="anthropic") == {
        "type": "provider", "provider_name": "anthropic", "model": "c", "base_url": "http://h",
    }


def test_a_provider_offered_by_an_entry_point_is_imported_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.metadata import EntryPoint

    from touchstone.judges.providers import registry as providers

    (tmp_path / "plugin_judge_provider.py").write_text(
        "from touchstone.judges.providers.dry_run import DryRunBackend\n"
        "from touchstone.judges.providers.registry import register_provider\n"
        "@register_provider('plugin-echo')\n"
        "class PluginBackend(DryRunBackend):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    point = EntryPoint("plugin-echo", "plugin_judge_provider", providers.ENTRY_POINT_GROUP)

    def points(*, group: str, name: str | None = None) -> list[EntryPoint]:
        assert group == providers.ENTRY_POINT_GROUP
        return [point] if name in (None, point.name) else []

    monkeypatch.setattr(providers, "entry_points", points)
    assert "plugin-echo" in provider_names()
    factory = providers.provider("plugin-echo")
    assert factory.__module__ == "plugin_judge_provider" and factory.__name__ == "PluginBackend"
