"""What ``touchstone simulate`` and ``touchstone redteam`` share: the attacker/judge model and session
settings from the command line, the target, a progress bar and the run under ``asyncio``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from touchstone.cli.common import err
from touchstone.engine.planning import JudgeChoice, judge_options, resolve_judge
from touchstone.errors import ConfigurationError
from touchstone.judges.config import JudgeSettings
from touchstone.simulator.core import Progress as ProgressCallback

T = TypeVar("T")

JUDGE_MODEL_HELP = (
    "Attacker and safety-judge model (any judge: default $TOUCHSTONE_JUDGE_MODEL, else gpt-4o-mini)."
)
TARGET_HELP = (
    "The application under test: an http(s) URL (an OpenAI-compatible chat endpoint, or a JSON POST with "
    "--target-body/--target-response-path) or module:function (an async callback in the SDK's protocol)."
)
BODY_HELP = 'JSON body template of a POST target; {query} is the user message, e.g. \'{"q": "{query}"}\'.'
PATH_HELP = "Dotted path of the reply in a POST target's answer, e.g. answer or data.text."


def attacker_config(
    model: str | None, base_url: str | None, azure_endpoint: str | None, azure_deployment: str | None
) -> Any:
    """The model configuration named on the command line (environment as fallback)."""
    config = resolve_judge(JudgeChoice(model, base_url, azure_endpoint, azure_deployment))
    if config is None:
        raise ConfigurationError(
            "no attacker/judge model: give --judge-model (and --judge-base-url for a local server) or set "
            "TOUCHSTONE_JUDGE_MODEL / OPENAI_BASE_URL"
        )
    return config


def session_settings(
    concurrency: int | None, no_cache: bool, timeout: float | None, max_retries: int | None
) -> JudgeSettings:
    """Judge-session settings (concurrency, cache, timeout, retries) of the attacker's calls."""
    for name, value in (("--concurrency", concurrency), ("--max-retries", max_retries)):
        if value is not None and value < (1 if name == "--concurrency" else 0):
            raise ConfigurationError(f"{name} must be {'at least 1' if name == '--concurrency' else '>= 0'}")
    if timeout is not None and not timeout > 0:
        raise ConfigurationError("--timeout must be a positive number of seconds")
    options = judge_options(
        concurrency=concurrency, cache=False if no_cache else None, timeout=timeout, max_retries=max_retries
    )
    return JudgeSettings.from_options(options)


def build_target(spec: str, body: str | None, response_path: str | None, timeout: float) -> Any:
    """The target named by ``spec`` (checked now, before any model call)."""
    from touchstone.targets import make_target

    if not timeout > 0:
        raise ConfigurationError("--target-timeout must be a positive number of seconds")
    return make_target(spec, body=body, response_path=response_path, timeout=timeout)


@contextlib.contextmanager
def progress_bar(label: str, quiet: bool) -> Iterator[ProgressCallback | None]:
    """A progress callback drawing a bar on stderr (None with --quiet)."""
    if quiet:
        yield None
        return
    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err)
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield update


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)
