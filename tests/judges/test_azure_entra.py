"""Azure OpenAI with Entra ID (``azure_ad_token_provider=`` / ``credential=``) against the loopback
fake server: the bearer token replaces the key, the credential is asked for the Cognitive Services
scope, a fresh token is fetched for every request (retries included), no token reaches the run's
provenance, the run store, the judge cache or an error message, and missing or unusable credentials
stop the run with a message that says what to set."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.judge_eval import SCHEMA, parse_score, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FaultPlan, Reply

import touchstone
from touchstone import RunStore
from touchstone.errors import ConfigurationError, RunAbortedError
from touchstone.evaluators.registry import create
from touchstone.judges import AzureOpenAIModelConfiguration, JudgeSettings, get_judge_client, judge_session
from touchstone.judges.config import public_config

TOKEN = "tok-entra-4f1c9e0b7a2d55e1-SECRET"
ENV_KEY = "azure-env-key-must-not-be-sent-0123456789"
SCOPE = "https://cognitiveservices.azure.com/.default"
DEPLOYMENT = "judge-dep"
API_VERSION = "2024-10-21"
ROWS = [
    {
        "query": "Where is the Eiffel Tower?",
        "response": "It is in Paris.",
        "context": "The Eiffel Tower is in Paris.",
    },
    {"query": "How tall is it?", "response": "About 330 metres.", "context": "The tower is 330 metres tall."},
]


def fast(**kw: Any) -> JudgeSettings:
    base: dict[str, Any] = {"cache": False, "timeout": 0.5, "backoff_base": 0.001, "backoff_max": 0.01}
    base.update(kw)
    return JudgeSettings(**base)


FAST_RUN: dict[str, Any] = {"timeout": 0.5, "judge_settings": {"backoff_base": 0.001, "backoff_max": 0.01}}


def msgs(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"QUERY: q\nRESPONSE: {text}"}]


@dataclass(frozen=True)
class AccessToken:
    """The shape ``azure.core.credentials.TokenCredential.get_token`` returns."""

    token: str
    expires_on: int


class Credential:
    """A ``TokenCredential``: records the scopes it is asked for, a new token each time."""

    def __init__(self, prefix: str = TOKEN) -> None:
        self.prefix = prefix
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        return AccessToken(f"{self.prefix}-{len(self.scopes)}", int(time.time()) + 3600)


class AsyncCredential(Credential):
    """An ``azure.identity.aio`` style credential: ``get_token`` is a coroutine."""

    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:  # type: ignore[override]
        return Credential.get_token(self, *scopes, **kwargs)


def counting_provider(*, asynchronous: bool = False) -> Any:
    """A token provider issuing ``TOKEN-1``, ``TOKEN-2``... (a new token on every call, as after an
    expiry), sync like ``azure.identity.get_bearer_token_provider`` or async like its ``aio`` twin."""
    calls: list[str] = []

    def issue() -> str:
        calls.append(f"{TOKEN}-{len(calls) + 1}")
        return calls[-1]

    async def issue_async() -> str:
        return issue()

    # Any: the tokens issued ride on the function as an attribute, which function types do not declare
    provider: Any = issue_async if asynchronous else issue
    provider.calls = calls
    return provider


@pytest.fixture(autouse=True, params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs over both HTTP stacks of the ``openai`` client."""
    monkeypatch.setenv("TOUCHSTONE_HTTP_TRANSPORT", request.param)
    return str(request.param)


@pytest.fixture(autouse=True)
def _no_azure_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_ENDPOINT",
                 "AZURE_OPENAI_DEPLOYMENT", "AZURE_OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_openai.handler = toy_judge_handler
    return fake_openai


def entra(server: FakeOpenAIServer, **auth: Any) -> AzureOpenAIModelConfiguration:
    cfg = AzureOpenAIModelConfiguration(
        azure_endpoint=server.endpoint, azure_deployment=DEPLOYMENT, api_version=API_VERSION
    )
    cfg.update(auth)  # type: ignore[typeddict-item]
    return cfg


def auth_headers(server: FakeOpenAIServer) -> list[str | None]:
    return [r.headers.get("authorization") for r in server.requests]


# ---------------------------------------------------------------------------- what is sent
async def test_token_provider_sends_bearer_and_no_api_key(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", ENV_KEY)  # in the environment, but the provider wins
    cfg = entra(server, azure_ad_token_provider=lambda: TOKEN)
    async with judge_session(fast()):
        reply = await get_judge_client(cfg).chat(msgs("a"), json_schema=SCHEMA, validate=parse_score)
    assert parse_score(reply) and reply.structured
    [rec] = server.requests
    assert rec.path == f"/openai/deployments/{DEPLOYMENT}/chat/completions"
    assert f"api-version={API_VERSION}" in rec.query
    assert rec.headers["authorization"] == f"Bearer {TOKEN}"
    assert "api-key" not in rec.headers
    assert ENV_KEY not in json.dumps(rec.headers)


@pytest.mark.parametrize("credential_cls", [Credential, AsyncCredential], ids=["sync", "async"])
async def test_credential_is_asked_for_the_cognitive_services_scope(
    credential_cls: type[Credential], server: FakeOpenAIServer
) -> None:
    credential = credential_cls()
    cfg = entra(server, credential=credential)
    async with judge_session(fast()):
        client = get_judge_client(cfg)
        await client.chat(msgs("a"))
        await client.chat(msgs("b"))
    assert credential.scopes == [(SCOPE,), (SCOPE,)]  # one get_token per request, this scope only
    assert auth_headers(server) == [f"Bearer {TOKEN}-1", f"Bearer {TOKEN}-2"]
    assert all("api-key" not in r.headers for r in server.requests)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
async def test_provider_is_called_for_every_request_retries_included(
    asynchronous: bool, server: FakeOpenAIServer
) -> None:
    """The ``openai`` client calls the provider before every request, so a provider that refreshes
    an expiring token (as azure-identity's does) is always sent its current token; a retried request
    fetches one again."""
    provider = counting_provider(asynchronous=asynchronous)
    server.faults = FaultPlan(rate=1.0, kinds=("500",), attempts=1)  # each call's first attempt fails
    cfg = entra(server, azure_ad_token_provider=provider)
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        for text in ("a", "b", "c"):
            assert parse_score(await client.chat(msgs(text), validate=parse_score))
    assert server.count == 6 and session.stats["retries"] == 3
    assert provider.calls == [f"{TOKEN}-{i}" for i in range(1, 7)]
    assert auth_headers(server) == [f"Bearer {TOKEN}-{i}" for i in range(1, 7)]


# ---------------------------------------------------------------------------- nothing secret kept
@pytest.mark.parametrize("auth", ["provider", "credential"])
async def test_no_token_in_session_info_or_config_repr(auth: str, server: FakeOpenAIServer) -> None:
    credential = Credential()
    kw = {"azure_ad_token_provider": lambda: TOKEN} if auth == "provider" else {"credential": credential}
    cfg = entra(server, **kw)
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        await client.chat(msgs("a"))
        live = json.dumps(session.info(), default=str)
    final = json.dumps(session.info(), default=str)
    [model] = session.info()["models"]
    assert model["provider"] == "azure_openai" and model["model"] == DEPLOYMENT
    for text in (live, final, repr(cfg), json.dumps(public_config(cfg), default=str), repr(client)):
        assert TOKEN not in text
    assert server.requests[0].headers["authorization"].startswith(f"Bearer {TOKEN}")  # it was used


@pytest.mark.parametrize("auth", ["provider", "credential"])
def test_evaluate_stores_no_token(auth: str, server: FakeOpenAIServer, tmp_path: Path) -> None:
    credential = Credential()
    kw = {"azure_ad_token_provider": lambda: TOKEN} if auth == "provider" else {"credential": credential}
    evaluator = create("groundedness", model_config=entra(server, **kw))
    result = touchstone.evaluate(
        data=ROWS, evaluators={"grounded": evaluator}, store=tmp_path / "runs.db", **FAST_RUN
    )

    assert result.n_failed == 0
    assert all(r["outputs.grounded.groundedness"] in (1, 2, 3, 4, 5) for r in result.rows)
    assert result.run["judge"]["models"][0]["provider"] == "azure_openai"
    assert result.run["judge"]["stats"]["calls"] == server.count == len(ROWS)
    assert all(r.headers["authorization"].startswith(f"Bearer {TOKEN}") for r in server.requests)
    if auth == "credential":
        assert set(credential.scopes) == {(SCOPE,)}
    assert TOKEN.encode() not in (tmp_path / "runs.db").read_bytes()
    cache = Path(os.environ["TOUCHSTONE_CACHE"])  # the run's judge cache (private to this test)
    assert cache.exists() and TOKEN.encode() not in cache.read_bytes()
    assert TOKEN not in json.dumps(result.run, default=str)


UNAUTHORIZED = (
    f"Unauthorized. Access token is missing, invalid, audience is incorrect or have expired. Got {TOKEN}-1 "
    f"(Authorization: Bearer {TOKEN}-1)"
)


async def test_401_message_holds_no_token(server: FakeOpenAIServer) -> None:
    server.handler = lambda r: Reply(status=401, error=UNAUTHORIZED, error_code="401")
    provider = counting_provider()
    async with judge_session(fast()) as session:
        client = get_judge_client(entra(server, azure_ad_token_provider=provider))
        with pytest.raises(RunAbortedError) as info:
            await client.chat(msgs("a"))
        with pytest.raises(RunAbortedError):
            await client.chat(msgs("b"))  # the run is stopped: no request, no token fetched
    text = str(info.value)
    assert "authentication failed" in text and DEPLOYMENT in text and "127.0.0.1" in text
    assert TOKEN not in text  # neither the raw token the server echoed nor the one after "Bearer"
    assert server.count == 1 and provider.calls == [f"{TOKEN}-1"]
    assert session.aborted is not None and TOKEN not in str(session.aborted)


def test_401_in_a_run_stops_it_and_stores_no_token(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.handler = lambda r: Reply(status=401, error=UNAUTHORIZED, error_code="401")
    evaluator = create(
        "groundedness", model_config=entra(server, azure_ad_token_provider=counting_provider())
    )
    with pytest.raises(RunAbortedError) as info:
        touchstone.evaluate(data=ROWS * 10, evaluators={"grounded": evaluator}, store=tmp_path / "runs.db",
                            concurrency=2, **FAST_RUN)
    assert "authentication failed" in str(info.value) and TOKEN not in str(info.value)
    (run,) = RunStore(tmp_path / "runs.db").list_runs()
    assert run.status == "aborted"  # stopped early: what was scored is kept, the rest counted as failed
    assert TOKEN.encode() not in (tmp_path / "runs.db").read_bytes()


# ---------------------------------------------------------------------------- missing credentials
async def test_no_key_token_provider_or_credential_aborts_with_what_to_set(server: FakeOpenAIServer) -> None:
    cfg = entra(server)
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        with pytest.raises(RunAbortedError) as info:
            await client.chat(msgs("a"))
        with pytest.raises(RunAbortedError):
            await client.chat(msgs("b"))
    text = str(info.value)
    assert DEPLOYMENT in text and "no Azure OpenAI credentials" in text
    assert "AZURE_OPENAI_API_KEY" in text and "azure_ad_token_provider" in text and "credential" in text
    assert server.count == 0 and session.aborted is not None


def test_no_credentials_in_a_run(server: FakeOpenAIServer, tmp_path: Path) -> None:
    evaluator = create("groundedness", model_config=entra(server))
    with pytest.raises(RunAbortedError, match="no Azure OpenAI credentials"):
        touchstone.evaluate(
            data=ROWS, evaluators={"grounded": evaluator}, store=tmp_path / "runs.db", **FAST_RUN
        )
    assert server.count == 0


class CredentialUnavailableError(Exception):
    """Stands in for ``azure.identity.CredentialUnavailableError``."""


async def test_a_credential_that_cannot_give_a_token_stops_the_run(server: FakeOpenAIServer) -> None:
    calls: list[int] = []

    def provider() -> str:
        calls.append(1)
        raise CredentialUnavailableError(
            "DefaultAzureCredential failed to retrieve a token from the included credentials"
        )

    async with judge_session(fast()) as session:
        client = get_judge_client(entra(server, azure_ad_token_provider=provider))
        with pytest.raises(RunAbortedError) as info:
            await client.chat(msgs("a"))
        with pytest.raises(RunAbortedError):
            await client.chat(msgs("b"))
    text = str(info.value)
    assert "could not get an Entra ID token from azure_ad_token_provider" in text
    assert "CredentialUnavailableError: DefaultAzureCredential failed" in text
    assert server.count == 0 and len(calls) == 1 and session.aborted is not None


def test_a_failing_credential_stops_a_run_instead_of_failing_every_row(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    class Broken:
        def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
            raise CredentialUnavailableError("no managed identity endpoint found")

    evaluator = create("groundedness", model_config=entra(server, credential=Broken()))
    with pytest.raises(RunAbortedError, match=r"credential\.get_token: CredentialUnavailableError"):
        touchstone.evaluate(data=ROWS * 5, evaluators={"grounded": evaluator}, store=tmp_path / "runs.db",
                            concurrency=1, cache=False, **FAST_RUN)
    assert server.count == 0


@pytest.mark.parametrize("token", ["", None])
async def test_an_empty_token_stops_the_run(token: str | None, server: FakeOpenAIServer) -> None:
    async with judge_session(fast()):
        client = get_judge_client(entra(server, azure_ad_token_provider=lambda: token))
        with pytest.raises(RunAbortedError, match="azure_ad_token_provider returned no Entra ID token"):
            await client.chat(msgs("a"))
    assert server.count == 0


async def test_missing_endpoint_or_deployment_is_a_configuration_error(server: FakeOpenAIServer) -> None:
    no_endpoint = AzureOpenAIModelConfiguration(
        azure_deployment=DEPLOYMENT, azure_ad_token_provider=lambda: TOKEN
    )
    no_deployment = AzureOpenAIModelConfiguration(
        azure_endpoint=server.endpoint, azure_ad_token_provider=lambda: TOKEN
    )
    async with judge_session(fast()):
        with pytest.raises(ConfigurationError, match=r"azure_endpoint \(or \$AZURE_OPENAI_ENDPOINT\)"):
            await get_judge_client(no_endpoint).chat(msgs("a"))
        with pytest.raises(ConfigurationError, match=r"azure_deployment \(or \$AZURE_OPENAI_DEPLOYMENT\)"):
            await get_judge_client(no_deployment).chat(msgs("a"))
    assert server.count == 0
