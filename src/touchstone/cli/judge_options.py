"""The judge's command-line options, defined once and shared by the commands that call a judge
(``eval``, ``monitor``): the same flags, defaults and help everywhere."""

from __future__ import annotations

from typing import Any

import typer

JUDGE_MODEL: Any = typer.Option(
    None,
    "--judge-model",
    help="Judge model for LLM-judged metrics (default: $TOUCHSTONE_JUDGE_MODEL, else gpt-4o-mini).",
)
JUDGE_PROVIDER: Any = typer.Option(
    None,
    "--judge-provider",
    help="Provider serving the judge model: openai (default; any OpenAI-compatible server), "
    "azure_openai, anthropic, or one a plugin registers (touchstone.judge_providers entry points).",
)
JUDGE_BASE_URL: Any = typer.Option(
    None, "--judge-base-url", help="OpenAI-compatible base URL of the judge (default: $OPENAI_BASE_URL)."
)
SCORE_MODE: Any = typer.Option(
    None,
    "--score-mode",
    help="Judge scores: 'sampled' (default) or 'logprobs' (probability-weighted expectation).",
)
METRIC_FILE: Any = typer.Option(
    None,
    "--metric-file",
    help="YAML file of custom metrics (rubrics or Python functions), all added to the run.",
)
AZURE_ENDPOINT: Any = typer.Option(
    None, "--azure-endpoint", help="Azure OpenAI endpoint of the judge (default: $AZURE_OPENAI_ENDPOINT)."
)
AZURE_DEPLOYMENT: Any = typer.Option(
    None,
    "--azure-deployment",
    help="Azure OpenAI deployment of the judge (default: $AZURE_OPENAI_DEPLOYMENT).",
)
CONCURRENCY: Any = typer.Option(
    None,
    "--concurrency",
    help="Most judge requests in flight (default 32; halves on 429 and climbs back).",
)
NO_CACHE: Any = typer.Option(False, "--no-cache", help="Do not read or write the judge response cache.")
TIMEOUT: Any = typer.Option(None, "--timeout", help="Seconds per judge request (default 60).")
MAX_RETRIES: Any = typer.Option(
    None, "--max-retries", help="Retries of a judge call after a transient error (default 6)."
)
HTTP_TRANSPORT: Any = typer.Option(
    None,
    "--http-transport",
    help="HTTP stack under the openai client: aiohttp (less CPU per request), httpx, or auto "
    "(default: aiohttp when installed; or $TOUCHSTONE_HTTP_TRANSPORT).",
)
NO_HEDGE: Any = typer.Option(
    False,
    "--no-hedge",
    help="Never send a stalled judge request a second time (by default one far slower than the "
    "server's recent replies is sent again beside it, at most 10% of calls + 4: on a paid API each "
    "is billed).",
)
