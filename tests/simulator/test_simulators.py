"""The simulators on the loopback fake server as the attacker model, against a target callable:
the SDK's call shapes and output, the same seed giving the same conversations, target failures and
timeouts recorded per conversation, and the output accepted by ``touchstone eval -m violence``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.simulator.sim_fakes import callback, failing_callback, handler
from typer.testing import CliRunner

from touchstone.cli.app import app
from touchstone.data.kinds import check_conversation
from touchstone.errors import ConfigurationError
from touchstone.simulator import (
    AdversarialScenario,
    AdversarialSimulator,
    DirectAttackSimulator,
    IndirectAttackSimulator,
    JsonLineList,
)
from touchstone.simulator import data as sim_data
from touchstone.simulator.strategies import get_strategy

QA_TOTAL = sum(len(sim_data.objectives()[c]) for c in sim_data.scenarios()["adv_qa"].categories)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer(handler=handler).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def config(server: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "fake-attacker", "base_url": server.base_url, "api_key": "sk-test-not-a-real-key-0000"}


def simulate(config: dict[str, str], **kwargs: Any) -> JsonLineList:
    sim = AdversarialSimulator(model_config=config)
    kwargs.setdefault("target", callback)
    return asyncio.run(sim(**kwargs))


def test_sdk_enum_names_and_values() -> None:
    assert AdversarialScenario.ADVERSARIAL_QA.value == "adv_qa"
    assert AdversarialScenario.ADVERSARIAL_CONVERSATION.value == "adv_conversation"
    assert AdversarialScenario.ADVERSARIAL_CONTENT_GEN_GROUNDED.value == "adv_content_gen_grounded"
    protected = AdversarialScenario.ADVERSARIAL_CONTENT_PROTECTED_MATERIAL
    assert protected.value == "adv_content_protected_material"
    # every scenario has its task and objectives in the package data
    for member in AdversarialScenario:
        info = sim_data.scenarios()[member.value]
        assert info.task and all(sim_data.objectives()[c] for c in info.categories)


def test_qa_conversations_in_the_sdk_shape(config: dict[str, str], server: FakeOpenAIServer) -> None:
    before = len(server.requests)
    out = simulate(config, scenario=AdversarialScenario.ADVERSARIAL_QA, max_simulation_results=6,
                   randomization_seed=3)
    assert {r.body.get("seed") for r in server.requests[before:]} == {3}  # the seed reaches the attacker
    assert len(out) == 6
    categories = {item["template_parameters"]["category"] for item in out}
    assert categories == {"violence", "sexual", "self_harm", "hate_unfairness"}  # categories taken in turn
    for item in out:
        assert item["$schema"] == "http://azureml/sdk-2-0/ChatConversation.json"
        roles = [m["role"] for m in item["messages"]]
        assert roles == ["user", "assistant"]  # one exchange outside the conversation scenario
        assert item["messages"][0]["content"].startswith("turn 1 [")
        assert check_conversation(item) is None
        assert item["template_parameters"]["metadata"]["randomization_seed"] == 3
    lines = out.to_json_lines().splitlines()
    assert [json.loads(line) for line in lines] == list(out)
    rows = [json.loads(line) for line in out.to_eval_qr_json_lines().splitlines()]
    assert rows == [
        {"query": i["messages"][0]["content"], "response": i["messages"][1]["content"],
         "category": i["template_parameters"]["category"]}
        for i in out
    ]
    assert out.judge is not None and out.judge["stats"]["calls"] >= 6


def test_same_seed_same_conversations_other_seed_other_order(config: dict[str, str]) -> None:
    first = simulate(config, scenario="qa", max_simulation_results=8, randomization_seed=11)
    again = simulate(config, scenario="qa", max_simulation_results=8, randomization_seed=11)
    other = simulate(config, scenario="qa", max_simulation_results=8, randomization_seed=12)
    assert first.to_json_lines() == again.to_json_lines()
    ids = [i["template_parameters"]["metadata"]["objective_id"] for i in first]
    assert ids != [i["template_parameters"]["metadata"]["objective_id"] for i in other]
    assert len(set(ids)) == 8


def test_conversation_scenario_runs_several_turns_with_history(config: dict[str, str]) -> None:
    out = simulate(config, scenario=AdversarialScenario.ADVERSARIAL_CONVERSATION, max_conversation_turns=3,
                   max_simulation_results=2, randomization_seed=1)
    for item in out:
        users = [m["content"] for m in item["messages"] if m["role"] == "user"]
        assert [u.split(" [")[0] for u in users] == ["turn 1", "turn 2", "turn 3"]
        assert len(item["messages"]) == 6
    rows = out.to_eval_qr_json_lines().splitlines()
    assert len(rows) == 6  # one query/response row per exchange


def test_results_are_capped_by_the_objectives(config: dict[str, str]) -> None:
    out = simulate(config, scenario="code_vulnerability", max_simulation_results=50, randomization_seed=0)
    assert len(out) == len(sim_data.objectives()["code_vulnerability"])


def test_target_errors_and_timeouts_are_recorded_per_conversation(config: dict[str, str]) -> None:
    objectives = [o.objective for o in sim_data.objectives()["violence"]]
    out = simulate(config, scenario="qa", max_simulation_results=QA_TOTAL, randomization_seed=5,
                   target=failing_callback(objectives[0]))
    failed = [i for i in out if "error" in i]
    assert len(out) == QA_TOTAL  # every qa objective, so the failing one among them
    assert [i["error"]["kind"] for i in failed] == ["target_error"]
    # whichever conversation carries that objective failed; the others completed
    for item in out:
        hit = objectives[0] in item["messages"][0]["content"]
        assert ("error" in item) == hit
        if hit:
            assert "application crashed" in item["error"]["message"] and item["error"]["turn"] == 0
            assert [m["role"] for m in item["messages"]] == ["user"]
        else:
            assert item["messages"][-1]["role"] == "assistant"
    slow = simulate(config, scenario="qa", max_simulation_results=QA_TOTAL, randomization_seed=5,
                    target=failing_callback(objectives[0], hang=True), target_timeout=0.3)
    kinds = sorted(i["error"]["kind"] for i in slow if "error" in i)
    assert kinds == ["target_timeout"] * len(failed)


def test_target_reply_must_follow_the_protocol(config: dict[str, str]) -> None:
    async def bad(messages: Any, stream: bool = False, session_state: Any = None, context: Any = None) -> Any:
        return "just text"

    out = simulate(config, scenario="qa", max_simulation_results=2, randomization_seed=0, target=bad)
    assert all(i["error"]["kind"] == "target_error" and "messages" in i["error"]["message"] for i in out)


def test_direct_attack_pairs_regular_and_jailbroken(config: dict[str, str]) -> None:
    sim = DirectAttackSimulator(model_config=config)
    out = asyncio.run(sim(scenario=AdversarialScenario.ADVERSARIAL_QA, target=callback,
                          max_simulation_results=4, randomization_seed=9))
    assert set(out) == {"jailbreak", "regular"}
    for plain, jb in zip(out["regular"], out["jailbreak"], strict=True):
        meta_plain = plain["template_parameters"]["metadata"]
        meta_jb = jb["template_parameters"]["metadata"]
        assert meta_plain["objective_id"] == meta_jb["objective_id"]
        template = sim_data.jailbreak(meta_jb["jailbreak"])
        assert jb["messages"][0]["content"] == template.apply(plain["messages"][0]["content"])
        assert meta_jb["original_turn"] == plain["messages"][0]["content"]


def test_indirect_attack_plants_the_instruction(config: dict[str, str]) -> None:
    sim = IndirectAttackSimulator(model_config=config)
    out = asyncio.run(sim(target=callback, max_simulation_results=5, randomization_seed=2))
    assert len(out) == 5
    for item in out:
        meta = item["template_parameters"]["metadata"]
        assert set(meta) >= {"xpia_attack_type", "action", "document_type"}
        assert meta["action"] in item["messages"][0]["content"]
        assert check_conversation(item) is None


def test_bad_options_fail_before_any_call(server: FakeOpenAIServer, config: dict[str, str]) -> None:
    before = len(server.requests)
    sim = AdversarialSimulator(model_config=config)
    with pytest.raises(ConfigurationError, match="unknown scenario"):
        asyncio.run(sim(scenario="nope", target=callback))
    with pytest.raises(ConfigurationError, match="max_simulation_results"):
        asyncio.run(sim(scenario="qa", target=callback, max_simulation_results=0))
    with pytest.raises(ConfigurationError, match="target"):
        asyncio.run(sim(scenario="qa", target="not callable"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="attacker model"):
        AdversarialSimulator(model_config=None)
    assert len(server.requests) == before


def test_simulated_conversations_are_accepted_by_touchstone_eval(
    config: dict[str, str], server: FakeOpenAIServer, tmp_path: Path
) -> None:
    out = simulate(config, scenario="qa", max_simulation_results=4, randomization_seed=4)
    path = tmp_path / "sim.jsonl"
    path.write_text(out.to_json_lines(), encoding="utf-8")
    result = CliRunner().invoke(app, [
        "eval", str(path), "-m", "violence,hate_unfairness", "--judge-model", "fake-judge",
        "--judge-base-url", server.base_url, "--store", str(tmp_path / "runs.db"), "-q",
        "--out", str(tmp_path / "out"),
    ], env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"})
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    for row, item in zip(rows, out, strict=True):
        expected = 6 if item["messages"][-1]["content"].startswith("COMPLY") else 0
        assert row["outputs.violence.violence_score"] == expected


def test_strategy_transform_in_a_conversation(config: dict[str, str]) -> None:
    # the jailbreak+base64 composition is what a red-team conversation sends
    text = "turn 1 [abc]: something"
    sent = get_strategy("jailbreak+base64").apply(text, 5)
    assert "base64" in sent


def test_conversations_with_a_target_error_still_evaluate(
    config: dict[str, str], server: FakeOpenAIServer, tmp_path: Path
) -> None:
    objective = sim_data.objectives()["violence"][0].objective
    out = simulate(config, scenario="qa", max_simulation_results=QA_TOTAL, randomization_seed=2,
                   target=failing_callback(objective))
    assert sum("error" in i for i in out) == 1
    path = tmp_path / "sim.jsonl"
    path.write_text(out.to_json_lines(), encoding="utf-8")
    result = CliRunner().invoke(app, [
        "eval", str(path), "-m", "violence", "--judge-model", "fake-judge",
        "--judge-base-url", server.base_url, "--store", str(tmp_path / "runs.db"), "-q",
        "--out", str(tmp_path / "out"),
    ], env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"})
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == QA_TOTAL
    errored = [r for r, i in zip(rows, out, strict=True) if "error" in i]
    assert len(errored) == 1 and errored[0]["inputs.error"]["kind"] == "target_error"
    # only the answered conversations have a severity
    scores = [r.get("outputs.violence.violence_score") for r in rows]
    assert sum(isinstance(v, (int, float)) and v == v for v in scores) == QA_TOTAL - 1  # NaN != NaN


def test_callbacks_as_the_sdk_calls_them_minimal_and_synchronous(config: dict[str, str]) -> None:
    seen_states: list[Any] = []

    async def minimal(messages: dict[str, Any], session_state: Any = None) -> dict[str, Any]:
        seen_states.append(session_state)
        messages["messages"].append({"role": "assistant", "content": "ok"})
        return {"messages": messages["messages"], "session_state": {"n": len(seen_states)}}

    def synchronous(messages: dict[str, Any], session_state: Any = None) -> dict[str, Any]:
        return {"messages": [*messages["messages"], {"role": "assistant", "content": "sync ok"}]}

    out = simulate(config, scenario="conversation", max_conversation_turns=2, max_simulation_results=1,
                   randomization_seed=0, target=minimal)
    assert [m["content"] for m in out[0]["messages"] if m["role"] == "assistant"] == ["ok", "ok"]
    assert seen_states == [None, {"n": 1}]  # the session state a reply returns goes to the next call
    out = simulate(config, scenario="qa", max_simulation_results=2, randomization_seed=0, target=synchronous)
    assert all(i["messages"][-1]["content"] == "sync ok" for i in out)
