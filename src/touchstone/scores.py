"""The typed result of scoring one row with one evaluator.

An evaluator turns one row into an :class:`Outcome`: one :class:`Score` per metric it reports (the
main one first), plus whatever extra keys the compatible SDK shows beside them (per-turn results of a
conversation, SDK-only keys). Everything inside touchstone -- the engine, the store's score columns,
aggregation, comparisons -- reads Scores. The compatible SDK's flat dict (``m``, ``m_result``,
``m_threshold``, ``m_reason``, ``m_error``...) is made from an Outcome only at the edge, by
:meth:`Outcome.to_sdk_outputs`: an evaluator's ``__call__``, ``evaluate()``'s rows and the files.

A score that could not be obtained is a Score with ``status = FAILED`` and an :class:`ErrorInfo`
(kind and message); it is never NaN and never dropped (pydantic-evals' ``EvaluatorFailure`` and
Inspect AI's unscored samples are the models).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, TypeAlias


class Status(str, Enum):
    """Whether a score was obtained."""

    OK = "ok"
    FAILED = "failed"


class ErrorKind(str, Enum):
    """Why a score could not be obtained (the store keeps it in a column, summaries count by it)."""

    INPUT = "input"
    """The row's inputs could not be used (missing after a target ran, wrong type, the target failed)."""
    JUDGE_CALL = "judge_call"
    """A model call failed after its retries, or the provider rejected this row's request."""
    JUDGE_REPLY = "judge_reply"
    """The judge answered, but no acceptable score could be read from it (after one repair)."""
    COMPUTATION = "computation"
    """The metric's own computation raised."""
    PARTIAL = "partial"
    """A part of the row failed (a conversation turn, a component of a composite metric)."""


@dataclass(frozen=True)
class ErrorInfo:
    """Why a score is missing: a kind (:class:`ErrorKind` value, or a provider's error kind) and a
    secret-free message."""

    kind: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class Score:
    """One metric's result on one row.

    ``name`` is the output key of the value (``f1_score``, ``groundedness``, ``rouge_recall``);
    ``value`` the number (``None`` when failed, or for a purely categorical score); ``label`` the
    categorical value where there is one (a severity label); ``passed`` against ``threshold`` when the
    metric has one; ``reason`` the judge's explanation; ``properties`` provenance and details;
    ``usage`` the model calls, tokens and cost spent on it."""

    name: str
    value: float | None
    status: Status = Status.OK
    label: str | None = None
    reason: str | None = None
    passed: bool | None = None
    threshold: float | None = None
    error: ErrorInfo | None = None
    properties: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status is Status.OK:
            if self.value is not None and isinstance(self.value, float) and math.isnan(self.value):
                raise ValueError(f"score {self.name} is NaN: record a failure instead")
        elif self.error is None:
            raise ValueError(f"failed score {self.name} needs an ErrorInfo")

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @classmethod
    def failed(cls, name: str, error: ErrorInfo, *, threshold: float | None = None,
               properties: dict[str, Any] | None = None) -> Score:
        return cls(name, None, Status.FAILED, error=error, threshold=threshold, properties=properties)


class Outcome(dict[str, Any]):
    """What an evaluator returns for one row: its Scores (``scores``, the main one first) together
    with their rendering as the compatible SDK's flat dict (the mapping itself).

    The Scores are the truth every internal consumer reads (engine, store columns, aggregation,
    comparisons). The flat rendering is made by the evaluator from the same values when it builds the
    Scores, because the SDK's key layout differs from one evaluator to another (``rouge_precision``,
    ``ndcg@3``, ``evaluation_per_turn``...); it is what ``__call__`` returns (as a plain dict), what
    the rows of ``evaluate()`` show and what the store keeps to rebuild them."""

    __slots__ = ("scores",)

    def __init__(self, scores: list[Score], outputs: Mapping[str, Any] | None = None) -> None:
        super().__init__(outputs or {})
        self.scores = scores

    @property
    def main(self) -> Score | None:
        return self.scores[0] if self.scores else None

    @property
    def failed(self) -> bool:
        """True when a score of the row failed (the row counts as failed for its evaluator)."""
        return any(s.status is Status.FAILED for s in self.scores)

    @property
    def error(self) -> ErrorInfo | None:
        for s in self.scores:
            if s.error is not None:
                return s.error
        return None

    def score(self, name: str) -> Score | None:
        for s in self.scores:
            if s.name == name:
                return s
        return None

    def to_sdk_outputs(self) -> dict[str, Any]:
        """The compatible SDK's flat keys, as a plain dict."""
        return dict(self)


ScoreLine: TypeAlias = tuple[str, float | None, str | None, str, str | None, int | None]
"""One Score as the store's queryable columns keep it, and as worker processes send it back: the
compact encoding of a :class:`Score` (made by :func:`touchstone.store.base.score_lines` or
:func:`score_line`, read back by :class:`CompactOutcome`). Its fields are read through the index
names below, never bare positions. A plain tuple rather than a NamedTuple: a run makes one per
score (600,000 for 100,000 ranked queries), and the collector stops tracking plain tuples of plain
values but keeps walking every instance of a tuple subclass -- NamedTuple lines made a pooled run's
results cost three times more in the parent."""

METRIC: Final = 0
"""The Score's name."""
VALUE: Final = 1
"""Its value as a float, or None."""
LABEL: Final = 2
"""Its categorical label, or None."""
STATUS: Final = 3
"""The :class:`Status` value."""
ERROR_KIND: Final = 4
"""The kind of its error, when it failed."""
PASSED: Final = 5
"""1 or 0 against its threshold, None without one."""


def score_line(
    metric: str, value: float | None, label: str | None, status: str, error_kind: str | None,
    passed: int | None,
) -> ScoreLine:
    """A :data:`ScoreLine` from its fields, by name."""
    return (metric, value, label, status, error_kind, passed)


class CompactOutcome(Outcome):
    """An Outcome that keeps its Scores as :data:`ScoreLine` tuples and makes the :class:`Score`
    objects on first access of :attr:`scores`; :attr:`lines` gives the lines to whoever needs only
    the values (the summary, the store). What worker processes send back and what the store keeps
    arrive this way, and an evaluator with many scores per row (ranking: six) returns it, so 500,000
    scores are not 500,000 objects that nobody reads (``__call__`` returns only the flat dict).

    ``error`` is the row's error message (the flat outputs' ``<prefix>_error``), used for failed
    lines (the typed columns keep the kind, not the message). ``lines=None`` (with
    :meth:`of_values`): every value of the outputs is a successful score, the lines are made from
    them when first asked for."""

    __slots__ = ("_built", "_error", "_failed", "_lines", "_main")

    def __init__(
        self,
        outputs: Mapping[str, Any],
        lines: Sequence[ScoreLine] | None,
        failed: bool,
        error: str | None = None,
    ) -> None:
        dict.__init__(self, outputs)
        self._lines = lines
        self._failed = failed
        self._error = error
        self._built: list[Score] | None = None
        self._main: str | None = None

    @classmethod
    def of_value_rows(
        cls, keys: Sequence[str], rows: Iterable[Sequence[float]], main: str
    ) -> list[CompactOutcome]:
        """``[of_values(dict(zip(keys, row)), main) for row in rows]``, without the intermediate
        dictionaries and ``__init__`` calls (ranking metrics build one per query: 100,000 at once)."""
        new, fill = cls.__new__, dict.update
        out: list[CompactOutcome] = []
        for row in rows:
            outcome = new(cls)
            fill(outcome, zip(keys, row, strict=True))
            outcome._lines, outcome._failed, outcome._error = None, False, None
            outcome._built, outcome._main = None, main
            out.append(outcome)
        return out

    @classmethod
    def of_values(cls, values: Mapping[str, float], main: str) -> CompactOutcome:
        """Successful scores only, one per key of ``values`` (all numbers), ``main`` first."""
        out = cls(values, None, False)
        out._main = main
        return out

    @property
    def lines(self) -> Sequence[ScoreLine]:
        if self._lines is None:
            main = self._main
            lines: list[ScoreLine] = []
            if main is not None and main in self:
                lines.append((main, float(self[main]), None, "ok", None, None))  # the ScoreLine fields
            lines += [(k, float(v), None, "ok", None, None) for k, v in self.items() if k != main]
            self._lines = lines
        return self._lines

    @property
    def scores(self) -> list[Score]:
        if self._built is None:
            self._built = [self._score(line) for line in self.lines]
        return self._built

    @scores.setter
    def scores(self, value: list[Score]) -> None:
        self._built = value

    def _score(self, line: ScoreLine) -> Score:
        if line[STATUS] == Status.OK.value:
            passed = None if line[PASSED] is None else bool(line[PASSED])
            return Score(line[METRIC], line[VALUE], label=line[LABEL], passed=passed)
        kind = line[ERROR_KIND] or ErrorKind.COMPUTATION.value
        return Score.failed(line[METRIC], ErrorInfo(kind, str(self._error or "failed")))

    @property
    def lines_current(self) -> bool:
        """True while :attr:`lines` are the truth: the Score objects were never built (once built,
        they may have been changed in place, and they are the truth)."""
        return self._built is None

    @property
    def failed(self) -> bool:
        if self._built is not None:
            return any(s.status is Status.FAILED for s in self._built)
        return self._failed

    def __reduce__(self) -> tuple[Any, ...]:
        return (CompactOutcome, (dict(self), self.lines, self._failed, self._error))

