"""A tiny test-only judge metric and the matching fake-server handler.

``ToyJudgeEvaluator`` asks the judge for ``{"reason", "score"}`` (JSON schema, validated), the way the
real judge metrics do; ``toy_judge_handler`` answers with a score that depends only on the request's
content, so a run's scores are reproducible whatever faults or retries happen on the way.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from tests.fakes.openai_server import FakeRequest, Reply
from touchstone.evaluators.base import Evaluator, InputSpec
from touchstone.judges import ChatReply, JudgeSettings, extract_json, get_judge_client
from touchstone.scores import Outcome

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["reason", "score"],
    "additionalProperties": False,
}


def parse_score(reply: ChatReply) -> tuple[int, str]:
    """The score and reason of a reply; ``ValueError`` when it is not a valid judgement."""
    data = extract_json(reply.text)
    if data is None:
        raise ValueError("no JSON object in the reply")
    score = data.get("score")
    if not isinstance(score, int) or not 1 <= score <= 5:
        raise ValueError(f"score {score!r} is not an integer from 1 to 5")
    return score, str(data.get("reason", ""))


def expected_score(response: str) -> int:
    """The score the fake judge gives a response."""
    return 1 + int(hashlib.sha256(response.encode()).hexdigest(), 16) % 5


def toy_judge_handler(request: FakeRequest) -> Reply:
    """Scores ``RESPONSE: ...`` in the last user message with :func:`expected_score`."""
    text = request.last_user
    response = text.split("RESPONSE:", 1)[1].strip() if "RESPONSE:" in text else text
    payload = json.dumps({"reason": f"judged {len(response)} characters", "score": expected_score(response)})
    if (
        request.json_schema is None
    ):  # free text with the JSON inside, as a model without schema support writes
        return Reply(content=f"Here is my judgement:\n```json\n{payload}\n```")
    return Reply(content=payload)


class ToyJudgeEvaluator(Evaluator):
    """A 1-5 judge metric over ``query`` and ``response`` (test only)."""

    metric: ClassVar[str] = "toy_judge"
    prefix: ClassVar[str] = "toy_judge"
    score_key: ClassVar[str] = "toy_judge"
    inputs: ClassVar[tuple[InputSpec, ...]] = (InputSpec("query"), InputSpec("response"))
    is_async: ClassVar[bool] = True
    needs_judge: ClassVar[bool] = True
    default_threshold: ClassVar[float | None] = 3

    def __init__(
        self, model_config: Any, *, threshold: float | None = None, settings: JudgeSettings | None = None
    ) -> None:
        super().__init__(threshold=threshold)
        self.client = get_judge_client(model_config, settings=settings)

    def options(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "judge": self.client.config.public()}

    async def _ascore(self, **inputs: Any) -> Outcome:
        messages = [
            {"role": "system", "content": "Rate the response from 1 to 5. Reply in JSON."},
            {"role": "user", "content": f"QUERY: {inputs['query']}\nRESPONSE: {inputs['response']}"},
        ]
        reply = await self.client.chat(messages, json_schema=SCHEMA, schema_name="toy", validate=parse_score)
        score, reason = parse_score(reply)
        return self.result(score, reason=reason)
