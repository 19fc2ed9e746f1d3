"""Credentials never leave the process: a judge base URL with ``user:password@`` and an API key in the
environment are absent from the store's bytes, summary.json, rows.jsonl, evaluation_results.json,
``show --json``, ``runs``, the terminal and the logs; the URL's credentials still authenticate (HTTP
Basic). The judge cache keys include a digest of the credential, so another key is not served
answers cached under the first one."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer, Reply, judge_handler
from tests.hardening.conftest import INPUTS, run_cli
from touchstone._redact import redact_config, redact_url, redact_urls

PASSWORD = "s3cretpw"
API_KEY = "sk-hardening-secret-key-0123456789"
SECRETS = (PASSWORD, API_KEY, "dXNlcjpzM2NyZXRwdw")  # the last: user:s3cretpw in base64 (Basic auth)


def _url(judge: FakeOpenAIServer) -> str:
    return f"http://user:{PASSWORD}@127.0.0.1:{judge.port}/v1"


def _assert_clean(where: str, text: str | bytes) -> None:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    for secret in SECRETS:
        assert secret.encode() not in data, f"{secret!r} found in {where}"


def _eval(judge: FakeOpenAIServer, tmp_path: Path, *extra: str) -> tuple[int, str]:
    outcome = run_cli(
        "eval", str(INPUTS / "good.jsonl"), "-m", "coherence,f1_score", "--judge-model", "fake-judge",
        "--judge-base-url", _url(judge), "--store", str(tmp_path / "runs.db"), "--out", str(tmp_path / "out"),
        "--name", "secret-run", *extra,
        env={"OPENAI_API_KEY": API_KEY},
    )
    assert "Traceback" not in outcome.output, outcome.output
    return outcome.code, outcome.output


def _store_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))


def test_credentials_in_the_base_url_appear_nowhere(
    fresh_judge: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the HTTP stacks' included
    code, output = _eval(fresh_judge, tmp_path)
    assert code == 0, output
    assert fresh_judge.count == 2  # two rows, one coherence call each: the credentials authenticated
    assert fresh_judge.requests[0].headers["authorization"].startswith("Basic ")
    _assert_clean("eval's output", output)
    for name in ("rows.jsonl", "summary.json", "evaluation_results.json"):
        _assert_clean(name, (tmp_path / "out" / name).read_bytes())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert "127.0.0.1" in json.dumps(summary)  # the endpoint is kept, without its credentials
    _assert_clean("the store", _store_bytes(tmp_path))

    runs = run_cli("runs", "--store", str(tmp_path / "runs.db"))
    assert runs.code == 0
    _assert_clean("runs", runs.output)
    run_id = re.search(r"\d{8}-\d{6}-[0-9a-f]{6}", runs.output)
    assert run_id is not None, runs.output
    shown = run_cli("show", run_id.group(0), "--json", "--store", str(tmp_path / "runs.db"))
    assert shown.code == 0, shown.output
    _assert_clean("show --json", shown.output)
    assert "***@127.0.0.1" in shown.output
    _assert_clean("the logs", caplog.text)


def test_a_failing_judge_does_not_print_the_credentials(
    fresh_judge: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that rejects every call (and echoes the URL it was called at) stops the run: the
    message, the store and the logs are still free of secrets."""
    caplog.set_level(logging.DEBUG)
    url = _url(fresh_judge)
    fresh_judge.handler = lambda req: Reply(status=401, error=f"bad key {API_KEY} for {url}")
    try:
        code, output = _eval(fresh_judge, tmp_path)
    finally:
        fresh_judge.handler = judge_handler
    assert code == 1, output
    _assert_clean("the error output", output)
    _assert_clean("the store", _store_bytes(tmp_path))
    _assert_clean("the logs", caplog.text)


def test_another_key_is_not_served_cached_answers(fresh_judge: FakeOpenAIServer, tmp_path: Path) -> None:
    def run(key: str, out: str) -> None:
        outcome = run_cli(
            "eval", str(INPUTS / "good.jsonl"), "-m", "coherence", "--judge-model", "fake-judge",
            "--judge-base-url", fresh_judge.base_url, "--store", str(tmp_path / "runs.db"), "-q",
            env={"OPENAI_API_KEY": key},
        )
        assert outcome.code == 0, outcome.output

    run("sk-first-key-0000000000", "a")
    assert fresh_judge.count == 2
    run("sk-first-key-0000000000", "b")
    assert fresh_judge.count == 2  # the same key: answered from the cache
    run("sk-second-key-111111111", "c")
    assert fresh_judge.count == 4  # another key: asked again (a wrong key must fail, not hit)


def test_cache_identity_holds_a_digest_never_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from touchstone.judges.config import as_model_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    configs = [
        as_model_config({"model": "m", "base_url": "http://u:pw1@h:1/v1", "api_key": "sk-aaaaaaaaaaaa"}),
        as_model_config({"model": "m", "base_url": "http://u:pw2@h:1/v1", "api_key": "sk-aaaaaaaaaaaa"}),
        as_model_config({"model": "m", "base_url": "http://h:1/v1", "api_key": "sk-bbbbbbbbbbbb"}),
    ]
    identities = [c.cache_identity() for c in configs]
    assert len(set(identities)) == 3
    for identity in identities:
        assert "pw1" not in identity and "pw2" not in identity and "sk-" not in identity
        assert identity.startswith("openai:h:1/v1|cred:")
    assert configs[0].public()["base_url"] == "http://***@h:1/v1"
    assert "pw1" not in repr(configs[0])


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://user:pw@127.0.0.1:8080/v1", "http://***@127.0.0.1:8080/v1"),
        ("https://token@host/v1?x=1", "https://***@host/v1?x=1"),
        ("https://host/openai?api-key=abc123&api-version=1", "https://host/openai?api-key=***&api-version=1"),
        ("https://a:b@c@host/x", "https://***@host/x"),
        ("http://host/v1", "http://host/v1"),
        ("not a url", "not a url"),
        ("http://u:p@[::1/v1", "http://***@[::1/v1"),  # unparsable: the user part is still removed
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_urls_in_text_and_config() -> None:
    text = "POST http://me:pw@h/v1/chat failed; retry at https://k@h2/x."
    assert redact_urls(text) == "POST http://***@h/v1/chat failed; retry at https://***@h2/x."
    config = {"judge": {"base_url": "http://me:pw@h/v1", "model": "m"}, "list": ["http://a:b@c/"], "n": 3}
    assert redact_config(config) == {"judge": {"base_url": "http://***@h/v1", "model": "m"},
                                     "list": ["http://***@c/"], "n": 3}


def test_resuming_a_run_whose_url_had_credentials_asks_for_the_url_again() -> None:
    from touchstone.engine.planning import JudgeChoice, resolve_judge
    from touchstone.errors import ConfigurationError

    stored = {"model": "fake-judge", "base_url": "http://***@127.0.0.1:9/v1"}
    with pytest.raises(ConfigurationError, match="--judge-base-url"):
        resolve_judge(JudgeChoice(), stored)
    again = resolve_judge(JudgeChoice(base_url=f"http://user:{PASSWORD}@127.0.0.1:9/v1"), stored)
    assert again["base_url"].startswith("http://user:")
    assert resolve_judge(JudgeChoice(), {"model": "m", "base_url": "http://127.0.0.1:9/v1"})["model"] == "m"
