"""Presets: named sets of metrics by use case (``question-answering``, ``document-search``, ``chatbot``,
``summarization``, ``rag``) and by stage (``development``, ``pre-production``, ``production``,
``ab-test``), and cost tiers (``--max-tier``).

A preset is a table row; :func:`resolve` adapts it to the columns the data has: a metric whose inputs
are not all there is dropped with the reason (never an error), so one preset serves data with and
without retrieved ids, reference answers, latency or feedback columns. Metrics above ``--max-tier``
are dropped the same way by :func:`filter_by_tier`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from touchstone.errors import InputValidationError, Problem

TIERS: tuple[str, ...] = ("free", "low", "medium", "high")
"""Cost tiers, cheapest first: free (lexical, ranking, local models), low (a small judge or a short
judgement), medium (a judge call per row), high (a large judge or several calls per row)."""


@dataclass(frozen=True)
class PresetMetric:
    """One metric of a preset: the registry name, options it is built with (``{"k": [3]}``), extra
    columns it needs beyond its own inputs, and what it tells in this preset."""

    metric: str
    why: str
    options: Mapping[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Preset:
    """A named set of metrics: ``kind`` is ``"use case"`` or ``"stage"``; ``notes`` say how to use it."""

    name: str
    kind: str
    description: str
    metrics: tuple[PresetMetric, ...]
    notes: tuple[str, ...] = ()

    @property
    def metric_names(self) -> list[str]:
        return [m.metric for m in self.metrics]


@dataclass(frozen=True)
class DroppedMetric:
    """A metric a preset (or ``--max-tier``) left out, and why."""

    metric: str
    reason: str

    def describe(self) -> str:
        return f"{self.metric}: {self.reason}"


@dataclass
class PresetPlan:
    """What a preset resolves to on given columns: the metrics kept (in the preset's order), the
    options of each, the metrics dropped with the reason, and the preset's notes."""

    preset: str
    metrics: list[str]
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    dropped: list[DroppedMetric] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def messages(self) -> list[str]:
        """One line per dropped metric, for the terminal."""
        return [f"preset {self.preset}: dropped {d.describe()}" for d in self.dropped]


_RANKING_NEEDS = "retrieved document ids and relevance labels"

_QA = (
    PresetMetric("faithfulness", "is the answer supported by the retrieved context"),
    PresetMetric("answer_relevancy", "does the answer address the question"),
    PresetMetric("ranking", f"precision@3 of the retrieved documents ({_RANKING_NEEDS})",
                 {"k": [3]}),
)
_SEARCH = (
    PresetMetric("ranking", f"nDCG@10, recall@20 and MRR of the ranking ({_RANKING_NEEDS})",
                 {"k": [10, 20]}),
)
_CHAT = (
    PresetMetric("context_relevance", "is the retrieved context relevant to the user's question"),
    PresetMetric("coherence", "does the reply hang together"),
    PresetMetric("user_satisfaction", "share of positive user feedback (a feedback column)"),
)
_SUMMARY = (
    PresetMetric("faithfulness", "is every claim of the summary in the source (context)"),
    PresetMetric("completeness", "does the summary keep the source's key points"),
    PresetMetric("conciseness", "does the summary say it without padding or repetition"),
)
_RAG = (
    PresetMetric("faithfulness", "is the answer supported by the retrieved context"),
    PresetMetric("answer_relevancy", "does the answer address the question"),
    PresetMetric("context_relevance", "is the retrieved context relevant to the question"),
    PresetMetric("ranking", f"precision@k and recall@k of the retrieval ({_RANKING_NEEDS})"),
)
_DEVELOPMENT = (
    PresetMetric("f1_score", "token overlap with the reference answer (free, instant)"),
    PresetMetric("faithfulness", "is the answer supported by the retrieved context"),
    PresetMetric("answer_relevancy", "does the answer address the question"),
)
_PRE_PRODUCTION = (
    PresetMetric("faithfulness", "is the answer supported by the retrieved context"),
    PresetMetric("answer_relevancy", "does the answer address the question"),
    PresetMetric("context_relevance", "is the retrieved context relevant to the question"),
    PresetMetric("context_precision", "are the useful chunks ranked first"),
    PresetMetric("context_recall", "does the context hold what the reference answer needs"),
    PresetMetric("answer_correctness", "does the answer agree with the reference answer"),
    PresetMetric("coherence", "does the answer hang together"),
    PresetMetric("fluency", "is the answer well written"),
    PresetMetric("content_safety", "violence, sexual, self-harm, hate severities"),
    PresetMetric("ranking", f"precision@k, recall@k, nDCG@k, MRR ({_RANKING_NEEDS})"),
    PresetMetric("f1_score", "token overlap with the reference answer"),
)
_PRODUCTION = (
    PresetMetric("ranking", f"hit rate@5 of the retrieval ({_RANKING_NEEDS})", {"k": [5]}),
    PresetMetric("faithfulness", "is the answer supported by the retrieved context"),
    PresetMetric("latency", "the application's response time (a latency column)"),
)
_AB_TEST = (
    PresetMetric("faithfulness", "is the answer supported by the retrieved context"),
    PresetMetric("answer_relevancy", "does the answer address the question"),
    PresetMetric("coherence", "does the answer hang together"),
)

PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("question-answering", "use case", "answers to questions over retrieved documents", _QA),
        Preset("document-search", "use case", "the ranking of a search or retrieval system", _SEARCH),
        Preset("chatbot", "use case", "a conversational assistant", _CHAT),
        Preset("summarization", "use case", "summaries of a source text given as context", _SUMMARY),
        Preset(
            "rag",
            "use case",
            "the RAG triad, plus precision@k and recall@k when retrieved ids and labels are present",
            _RAG,
        ),
        Preset("development", "stage", "quick feedback while building: cheap metrics first", _DEVELOPMENT,
               ("pair with --sample 50 or --max-tier low to iterate cheaply",)),
        Preset("pre-production", "stage", "the full set before a release", _PRE_PRODUCTION,
               ("check the cost first: touchstone eval --dry-run",)),
        Preset("production", "stage", "monitoring live traffic: retrieval hit rate, faithfulness, latency",
               _PRODUCTION, ("score a sample of the traffic: --sample N or --budget AMOUNT",)),
        Preset("ab-test", "stage", "two variants on the same rows, compared pairwise", _AB_TEST,
               ("run both variants on the same rows (the same --sample and --seed, or --rows-of RUN) "
                "and compare the two runs with a paired test (each row's scores side by side)",)),
    )
}
"""The presets by name: one row per preset (add a row to add one)."""


def get_preset(name: str) -> Preset:
    """The preset ``name``; an unknown name raises InputValidationError listing the known ones."""
    preset = PRESETS.get(name)
    if preset is None:
        known = ", ".join(PRESETS)
        problem = Problem("--preset", None, None, f"unknown preset {name!r}; known: {known}")
        raise InputValidationError([problem])
    return preset


def required_modes(metric: str) -> tuple[tuple[str, ...], ...] | None:
    """The alternative sets of inputs a registered metric needs (one of them must be present), or
    None when no metric of that name is registered."""
    from touchstone.evaluators import registry

    cls = registry.available().get(metric)
    if cls is None:
        return None
    if cls.input_modes:
        return tuple(cls.input_modes)
    return (tuple(spec.name for spec in cls.inputs if spec.required),)


def _missing(metric: PresetMetric, inputs: Collection[str]) -> str | None:
    """Why ``metric`` cannot run on data providing ``inputs``, or None when it can."""
    modes = required_modes(metric.metric)
    if modes is None:
        return "not a registered metric in this installation"
    extra = [n for n in metric.needs if n not in inputs]
    fits = [mode for mode in modes if all(n in inputs for n in mode)]
    if fits and not extra:
        return None
    if not fits:
        if len(modes) == 1:
            absent = [n for n in modes[0] if n not in inputs]
            return f"needs the column(s) {', '.join(modes[0])}; missing: {', '.join(absent)}"
        alternatives = " or ".join("(" + ", ".join(mode) + ")" for mode in modes)
        return f"needs the columns {alternatives}; none of these sets is complete"
    return f"needs the column(s) {', '.join(extra)}"


def resolve(name: str, columns: Collection[str] | None) -> PresetPlan:
    """The metrics of preset ``name`` on data with ``columns`` (input names after the column mapping:
    see :func:`touchstone.engine.planning.mapped_inputs`). ``None`` means the columns are unknown
    (a resumed run): every metric is kept. A metric whose inputs are missing is dropped with the
    reason; an unknown preset raises InputValidationError."""
    preset = get_preset(name)
    plan = PresetPlan(preset.name, [], notes=list(preset.notes))
    for entry in preset.metrics:
        reason = None if columns is None else _missing(entry, columns)
        if reason is not None:
            plan.dropped.append(DroppedMetric(entry.metric, reason))
            continue
        plan.metrics.append(entry.metric)
        if entry.options:
            plan.options[entry.metric] = dict(entry.options)
    return plan


def tier_rank(tier: str) -> int:
    """The position of ``tier`` in :data:`TIERS`; an unknown tier raises InputValidationError."""
    if tier not in TIERS:
        raise InputValidationError(
            [Problem("--max-tier", None, None, f"unknown tier {tier!r}; expected one of {', '.join(TIERS)}")]
        )
    return TIERS.index(tier)


def evaluator_tier(evaluator: Any) -> str:
    """The cost tier an evaluator declares (its ``info.tier``; ``free`` for a plain function)."""
    info = getattr(evaluator, "info", None)
    tier = getattr(info, "tier", None) or getattr(evaluator, "tier", None)
    return tier if isinstance(tier, str) and tier in TIERS else "free"


def filter_by_tier(
    evaluators: Mapping[str, Any], max_tier: str | None
) -> tuple[dict[str, Any], list[DroppedMetric]]:
    """The evaluators at or below ``max_tier`` (all of them when None) and those left out, each with
    its tier as the reason."""
    if max_tier is None:
        return dict(evaluators), []
    limit = tier_rank(max_tier)
    kept: dict[str, Any] = {}
    dropped: list[DroppedMetric] = []
    for name, ev in evaluators.items():
        tier = evaluator_tier(ev)
        if TIERS.index(tier) <= limit:
            kept[name] = ev
        else:
            dropped.append(DroppedMetric(name, f"cost tier {tier} is above --max-tier {max_tier}"))
    return kept, dropped


def describe_presets() -> list[dict[str, Any]]:
    """Every preset as a plain dict (name, kind, description, metrics with what each tells and the
    columns it needs, notes): what ``touchstone presets`` prints."""
    out: list[dict[str, Any]] = []
    for preset in PRESETS.values():
        metrics = []
        for entry in preset.metrics:
            modes = required_modes(entry.metric) or ()
            needs = " | ".join(", ".join((*mode, *entry.needs)) for mode in modes)
            metrics.append({"metric": entry.metric, "why": entry.why, "needs": needs,
                            "options": dict(entry.options)})
        out.append({"name": preset.name, "kind": preset.kind, "description": preset.description,
                    "metrics": metrics, "notes": list(preset.notes)})
    return out
