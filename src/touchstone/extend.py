"""Everything needed to extend touchstone, in one import: ``from touchstone.extend import ...``.

Scores and metrics
    :class:`Score` -- what a metric reports for one row (value, label, status, reason, error,
    properties, usage); :class:`Outcome` -- a row's Scores with the compatible SDK's flat keys;
    :class:`ErrorInfo` -- why a score could not be obtained; :class:`MetricInfo` -- what a metric is,
    as a value (names, inputs, range, direction, tier, default threshold, aggregators);
    :class:`InputSpec` -- one input a metric reads (name, kind, required); ``Tier`` -- a metric's
    cost class.

Evaluators
    :class:`Evaluator` -- the base of every metric: declare its inputs, implement ``_score`` (or
    ``_ascore`` with ``is_async = True``); :class:`FunctionEvaluator` -- a plain function as a
    metric; :class:`JudgeEvaluator` -- the base of LLM-judged metrics; :func:`register` -- make a
    metric (an evaluator class, or a :class:`PromptMetric` value) available by name, to
    ``touchstone eval -m NAME`` and the registry (third-party packages may declare theirs in the
    ``touchstone.metrics`` entry-point group instead).

Judged metrics from a prompt
    :class:`PromptMetric` -- a judged metric that is only a prompt, as one value (name, prompt,
    scale, inputs, threshold, direction, output keys); :class:`PromptMetricEvaluator` -- what scores
    it; :class:`PromptTemplate` -- a versioned prompt (``PromptTemplate.from_text``,
    :func:`load_prompt` for a packaged one, :func:`load_prompt_file` for a file); :class:`Scale` --
    an integer rating scale.

The judge primitive
    :func:`ask` -- render a prompt, ask for a JSON reply following a schema, validate it (one repair
    request), return the value with provenance and usage (:class:`Answer`); :func:`judge` -- a score
    on a :class:`Scale` built on :func:`ask` (:class:`Judgement`); :func:`model_reader` -- validate
    a reply against a pydantic model; :class:`JudgeReplyError` -- no usable reply after the repair.

Protocols and settings
    :class:`JudgeClient` -- what a judge client is (a model name and one ``chat`` call);
    :class:`JudgeSettings` -- how judge calls are made (concurrency, retries, cache...);
    :class:`Store` -- where runs and scores are kept; :class:`Executor` -- where the engine's work
    runs.
"""

from __future__ import annotations

from touchstone.engine.executors import Executor
from touchstone.evaluators.base import Evaluator, FunctionEvaluator, InputSpec, MetricInfo, Tier
from touchstone.evaluators.judge.metric import JudgeEvaluator
from touchstone.evaluators.judge.primitive import (
    Answer,
    Judgement,
    JudgeReplyError,
    ask,
    judge,
    model_reader,
)
from touchstone.evaluators.judge.prompt_metric import PromptMetric, PromptMetricEvaluator
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt, load_prompt_file
from touchstone.evaluators.judge.reply import Scale
from touchstone.evaluators.registry import register
from touchstone.judges.config import JudgeSettings
from touchstone.judges.protocol import JudgeClient
from touchstone.scores import ErrorInfo, Outcome, Score
from touchstone.store.base import Store

__all__ = [
    "Answer",
    "ErrorInfo",
    "Evaluator",
    "Executor",
    "FunctionEvaluator",
    "InputSpec",
    "JudgeClient",
    "JudgeEvaluator",
    "JudgeReplyError",
    "JudgeSettings",
    "Judgement",
    "MetricInfo",
    "Outcome",
    "PromptMetric",
    "PromptMetricEvaluator",
    "PromptTemplate",
    "Scale",
    "Score",
    "Store",
    "Tier",
    "ask",
    "judge",
    "load_prompt",
    "load_prompt_file",
    "model_reader",
    "register",
]
