"""Claims: splitting a text into atomic claims and checking them against documents, each in ONE
structured judge call per row (built on :func:`touchstone.evaluators.judge.ask`).

Three calls are offered:

* :func:`check_text` splits a text into claims **and** verifies every claim against the documents in
  one call (faithfulness: the response; context_recall: the reference answer). ragas spends two
  calls on the same work (statements, then verdicts).
* :func:`extract_claims` only splits (one call).
* :func:`verify_claims` checks a given list of claims, by number, in one call. A reply that leaves a
  claim without a verdict (or gives one for a claim that does not exist) gets the primitive's one
  repair request naming what was missing; if the repaired reply is still partial the row fails with
  :class:`~touchstone.evaluators.judge.JudgeReplyError` naming the claims left without a verdict.

Every verdict is kept as :class:`ClaimVerdict` (claim, supported or not, supporting document id,
the judge's reason) and rendered into the row's properties by :func:`evidence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict

from touchstone.evaluators.judge import ask, model_reader
from touchstone.evaluators.judge.prompts import PromptTemplate, format_documents, load_prompt

VerdictText = Literal["supported", "unsupported"]


class ClaimItem(BaseModel):
    """One claim with its verdict, as the judge writes it (:func:`check_text`)."""

    model_config = ConfigDict(extra="ignore")

    claim: str
    reason: str = ""
    verdict: VerdictText
    document: str = ""


class ClaimCheckReply(BaseModel):
    """The reply of :func:`check_text`: the text's claims with their verdicts, and whether the text
    is a refusal."""

    model_config = ConfigDict(extra="ignore")

    claims: list[ClaimItem]
    refusal: bool = False


class ClaimListReply(BaseModel):
    """The reply of :func:`extract_claims`."""

    model_config = ConfigDict(extra="ignore")

    claims: list[str]


class IndexedVerdict(BaseModel):
    """One verdict of :func:`verify_claims`, for the claim numbered ``index`` (1-based)."""

    model_config = ConfigDict(extra="ignore")

    index: int
    reason: str = ""
    verdict: VerdictText
    document: str = ""


class VerdictListReply(BaseModel):
    """The reply of :func:`verify_claims`."""

    model_config = ConfigDict(extra="ignore")

    verdicts: list[IndexedVerdict]


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with every property required and nothing else allowed (OpenAI's
    strict structured output wants both), local references inlined (not every server resolves
    them), titles and descriptions dropped (the prompt says what the fields mean)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items() if k not in ("title", "description")}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    schema = cast(dict[str, Any], inline(schema))

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(schema)
    return schema


CLAIM_CHECK_SCHEMA = strict_schema(ClaimCheckReply)
CLAIM_LIST_SCHEMA = strict_schema(ClaimListReply)
VERDICT_LIST_SCHEMA = strict_schema(VerdictListReply)


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim and what the judge said of it."""

    claim: str
    supported: bool
    document: str | None = None
    """Id of the supporting document (None when unsupported or when the judge named no known id)."""
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The verdict as the row's properties keep it."""
        return {"claim": self.claim, "verdict": "supported" if self.supported else "unsupported",
                "document": self.document, "reason": self.reason}


@dataclass
class ClaimReport:
    """The verdicts of one row, whether the text was a refusal, and the call's provenance
    (prompt, tokens, repair)."""

    verdicts: list[ClaimVerdict]
    refusal: bool = False
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.verdicts)

    @property
    def supported(self) -> int:
        return sum(1 for v in self.verdicts if v.supported)


def evidence(verdicts: Sequence[ClaimVerdict]) -> list[dict[str, Any]]:
    """The claim-level evidence kept in ``<m>_properties["claims"]``."""
    return [v.as_dict() for v in verdicts]


def _known_document(name: str | None, ids: set[str]) -> str | None:
    name = (name or "").strip()
    return name if name and name in ids else None


def _verdict(claim: str, verdict: str, document: str | None, reason: str, ids: set[str]) -> ClaimVerdict:
    # no document can support a claim when none was retrieved, whatever the judge says
    supported = verdict == "supported" and bool(ids)
    return ClaimVerdict(claim, supported, _known_document(document, ids) if supported else None, reason)


def _documents_data(documents: Sequence[Mapping[str, Any]]) -> tuple[str, set[str]]:
    return format_documents(documents), {str(d.get("id", "")) for d in documents}


async def check_text(
    client: Any,
    text: str,
    documents: Sequence[Mapping[str, Any]],
    *,
    question: str | None = None,
    text_name: str = "response",
    prompt: PromptTemplate | None = None,
) -> ClaimReport:
    """Split ``text`` into atomic claims and verify each against ``documents`` (``{id, content}``),
    in one judge call. ``text_name`` says what the text is in the prompt ("response", "reference
    answer"). A supported verdict naming an unknown document keeps ``document=None``; with no
    documents every claim is unsupported. An empty (or blank) text has no claims and costs no call.
    Raises ``JudgeReplyError`` after the one repair."""
    if not text.strip():
        # nothing written states nothing: no claims, and no call is spent finding none
        return ClaimReport([], False, {"judge_calls": 0, "skipped": f"empty {text_name}"})
    prompt = prompt or load_prompt("rag_claims")
    docs_text, ids = _documents_data(documents)
    answer = await ask(
        client, prompt, {"question": question, "text": text, "documents": docs_text},
        model_reader(ClaimCheckReply), schema=CLAIM_CHECK_SCHEMA, params={"text_name": text_name},
        what="claim verdicts",
    )
    reply = answer.value
    assert isinstance(reply, ClaimCheckReply)
    verdicts = [_verdict(c.claim, c.verdict, c.document, c.reason, ids) for c in reply.claims
                if c.claim.strip()]
    return ClaimReport(verdicts, bool(reply.refusal), answer.properties)


async def extract_claims(
    client: Any, text: str, *, question: str | None = None, prompt: PromptTemplate | None = None
) -> tuple[list[str], dict[str, Any]]:
    """The atomic claims of ``text`` (one judge call) and the call's provenance."""
    if not text.strip():
        return [], {"judge_calls": 0, "skipped": "empty text"}
    prompt = prompt or load_prompt("rag_claims_extract")
    answer = await ask(client, prompt, {"question": question, "text": text},
                       model_reader(ClaimListReply), schema=CLAIM_LIST_SCHEMA, what="claim list")
    reply = answer.value
    assert isinstance(reply, ClaimListReply)
    return [c.strip() for c in reply.claims if c.strip()], answer.properties


def verdict_list_reader(count: int) -> Any:
    """A reader for :func:`verify_claims`' reply: valid JSON, and exactly one verdict per claim
    number 1..``count``; otherwise the cause names the claims missing or unknown."""
    read_model = model_reader(VerdictListReply)

    def read(text: str) -> tuple[dict[int, IndexedVerdict] | None, str | None]:
        value, error = read_model(text)
        if error is not None:
            return None, error
        assert isinstance(value, VerdictListReply)
        by_index: dict[int, IndexedVerdict] = {}
        extra: list[int] = []
        for item in value.verdicts:
            if 1 <= item.index <= count and item.index not in by_index:
                by_index[item.index] = item
            else:
                extra.append(item.index)
        missing = [i for i in range(1, count + 1) if i not in by_index]
        if missing:
            return None, (f"no verdict for claim{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(map(str, missing))} (of {count})")
        if extra:
            return None, f"verdicts for claim numbers that do not exist or repeat: {extra}"
        return by_index, None

    return read


def numbered(claims: Sequence[str]) -> str:
    """Claims as a numbered list (the numbers the verdicts refer to)."""
    return "\n".join(f"{i}. {c}" for i, c in enumerate(claims, 1))


async def verify_claims(
    client: Any,
    claims: Sequence[str],
    documents: Sequence[Mapping[str, Any]],
    *,
    prompt: PromptTemplate | None = None,
) -> ClaimReport:
    """Verify every claim against ``documents`` in one judge call. An empty list of claims needs no
    call (an empty report). A reply missing verdicts is repaired once, then raises
    ``JudgeReplyError`` naming the claims without a verdict."""
    if not claims:
        return ClaimReport([], False, {})
    prompt = prompt or load_prompt("rag_claims_verify")
    docs_text, ids = _documents_data(documents)
    answer = await ask(client, prompt, {"claims": numbered(claims), "documents": docs_text},
                       verdict_list_reader(len(claims)), schema=VERDICT_LIST_SCHEMA, what="claim verdicts")
    by_index = answer.value
    verdicts = [_verdict(c, by_index[i].verdict, by_index[i].document, by_index[i].reason, ids)
                for i, c in enumerate(claims, 1)]
    return ClaimReport(verdicts, False, answer.properties)


__all__ = [
    "CLAIM_CHECK_SCHEMA",
    "CLAIM_LIST_SCHEMA",
    "VERDICT_LIST_SCHEMA",
    "ClaimCheckReply",
    "ClaimItem",
    "ClaimListReply",
    "ClaimReport",
    "ClaimVerdict",
    "IndexedVerdict",
    "VerdictListReply",
    "check_text",
    "evidence",
    "extract_claims",
    "numbered",
    "strict_schema",
    "verdict_list_reader",
    "verify_claims",
]
