"""The dry run as a provider: every call is answered at once, without a request, by a placeholder
reply whose token usage is an estimate (as httpx's ``MockTransport`` or Inspect's ``mockllm``).

``JudgeSettings(dry_run=True)`` makes this provider serve every configuration (see
:func:`~touchstone.judges.providers.registry.make_backend`), so a dry run goes through the same
session as a real one and counts its calls, tokens and cost the same way: ``--dry-run`` reports what
a run would spend. A placeholder follows the requested JSON schema with the lowest value each field
allows (a scale's minimum, an enum's first member, as many list items as required), so the judge
metrics read it as they would a real reply.
"""

from __future__ import annotations

import json
from typing import Any

from touchstone.judges.config import JudgeSettings, ModelConfiguration
from touchstone.judges.openai_replies import estimate_prompt_tokens, estimate_text_tokens
from touchstone.judges.providers.base import BackendBase, ChatRequest, Response
from touchstone.judges.providers.registry import DRY_RUN, register_provider

COMPLETION_TOKENS = 150
"""The completion tokens a dry-run reply counts (fewer when ``max_tokens`` is lower)."""


@register_provider(DRY_RUN)
class DryRunBackend(BackendBase):
    """Answers chat, embeddings and completions calls with placeholders; no server is met, so
    nothing it learns is remembered and no rate limit applies."""

    learns = False

    def __init__(self, config: ModelConfiguration, settings: JudgeSettings) -> None:
        super().__init__(settings, host="dry-run")
        self.rpm = self.tpm = None  # no server to spare: a dry run never waits
        self.structured.fix("json_schema")
        self._model = config.model_name

    def chat_body(self, model: str, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": request["messages"],
            "max_tokens": request["max_tokens"],
            "n": request["n"],
        }
        if request["json_schema"] is not None:
            schema = {"schema": request["json_schema"]}
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        return body

    async def chat(self, body: dict[str, Any], timeout: float) -> Response:
        n = int(body["n"])
        completion = min(body["max_tokens"] or COMPLETION_TOKENS, COMPLETION_TOKENS) * n
        fmt = body.get("response_format")
        text = placeholder_json(fmt["json_schema"]["schema"]) if fmt else ""
        choice = {"message": {"role": "assistant", "content": text}}
        prompt = estimate_prompt_tokens(body["messages"])
        return Response({
            "model": body["model"],
            "choices": [{**choice, "index": i} for i in range(n)],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        })

    async def embed(self, model: str, texts: list[str], timeout: float) -> Response:
        return Response({
            "data": [{"index": i, "embedding": [0.0]} for i in range(len(texts))],
            "usage": {"prompt_tokens": sum(estimate_text_tokens(t) for t in texts)},
        })

    async def completions(self, model: str, prompts: list[str], timeout: float) -> Response:
        return Response({
            "choices": [
                {"index": i, "logprobs": {"token_logprobs": [None, 0.0]}} for i in range(len(prompts))
            ],
            "usage": {"prompt_tokens": sum(estimate_text_tokens(t) for t in prompts)},
        })

    async def aclose(self) -> None:
        return None


def placeholder_json(schema: dict[str, Any]) -> str:
    """A JSON document that follows ``schema`` with the lowest value each field allows."""
    return json.dumps(_placeholder(schema))


def _placeholder(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _placeholder(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":  # as many items as the schema requires (a verdict per document...)
        return [_placeholder(schema.get("items") or {}) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "string":
        return ""
    return None
