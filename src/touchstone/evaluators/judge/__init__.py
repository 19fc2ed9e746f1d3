"""LLM-judged metrics, in small modules:

* :mod:`.primitive`: the one judge primitive (:func:`ask`: prompt -> request -> validated reply, one
  repair, provenance and usage) and :func:`judge`, a score on a scale built on it;
* :mod:`.prompts`: judge prompts as versioned data files (``touchstone/prompts/*.yaml``), the text
  under evaluation delimited when they are rendered;
* :mod:`.reply`: the :class:`Scale` and the tolerant reading of a score out of a reply;
* :mod:`.logprobs`: the probability-weighted expected score from token log-probabilities;
* :mod:`.model_config`: the judge's model configuration as a metric checks and describes it;
* :mod:`.metric`: :class:`JudgeEvaluator`, the base class of every judged metric;
* :mod:`.prompt_metric`: :class:`PromptMetric`, a prompt-only judged metric as a value;
* :mod:`.conversation`: conversations judged exchange by exchange, behind the small
  :class:`~.conversation.TurnScorer` protocol.
"""

from touchstone.evaluators.judge.metric import JudgeEvaluator
from touchstone.evaluators.judge.model_config import (
    check_model_config,
    configured_judge,
    describe_judge,
    no_judge_error,
)
from touchstone.evaluators.judge.primitive import (
    Answer,
    Judgement,
    JudgeReplyError,
    ask,
    judge,
    model_reader,
    score_schema,
)
from touchstone.evaluators.judge.reply import Scale

__all__ = [
    "Answer",
    "JudgeEvaluator",
    "JudgeReplyError",
    "Judgement",
    "Scale",
    "ask",
    "check_model_config",
    "configured_judge",
    "describe_judge",
    "judge",
    "model_reader",
    "no_judge_error",
    "score_schema",
]
