"""The evaluator protocol.

An evaluator is a small object that declares its inputs and its metric metadata (a
:class:`MetricInfo` instance), is callable on keyword inputs (the shape of ``azure-ai-evaluation``'s
evaluators) and scores one row into an :class:`~touchstone.scores.Outcome`: typed
:class:`~touchstone.scores.Score` objects (the main one first) with their rendering as the SDK's flat
keys (SPEC 3: ``<score_key>``, ``<prefix>_result``, ``<prefix>_threshold``, ``<prefix>_reason``, and
``<prefix>_error`` when no score could be obtained). ``__call__`` returns that rendering as a plain
dict; everything inside touchstone reads the Scores.

The engine never calls ``__call__``; it calls :meth:`Evaluator.score_batch` for CPU-bound metrics
(many rows per call, so per-row overhead stays small) and :meth:`Evaluator.ascore` for I/O-bound ones
(``is_async = True``), many at once. Both record a failing row as a failed Score, never as NaN.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from touchstone._exceptions import ErrorCategory
from touchstone.data.inputs import InputSpec as InputSpec  # defined with the data it describes
from touchstone.data.kinds import check_value
from touchstone.errors import (
    InputValidationError,
    Problem,
    RunAbortedError,
    UnknownOptionError,
    missing_input_classification,
)
from touchstone.scores import ErrorInfo, ErrorKind, Outcome, Score

Tier = Literal["free", "low", "medium", "high"]
"""Cost tiers (SPEC 3.8), cheapest first: free (lexical, ranking, local models: nothing billed per
call), low (a small judge or a short judgement), medium (a judge call per row), high (a large judge or
several calls per row). ``--max-tier`` keeps the metrics at or below one."""


@dataclass(frozen=True)
class MetricInfo:
    """What a metric is, as a value: its names, inputs, range, direction, cost tier, default threshold
    and the aggregators its summary uses. Every evaluator has one (``evaluator.info``); built-in
    classes declare it through their class attributes, and instances whose metric is defined at run
    time (a rubric from a YAML file, a user's function, a safety category) carry their own instance,
    so no class is ever built at run time."""

    name: str
    """Registry name (``f1_score``, ``groundedness``, a rubric's name)."""
    key: str
    """Output key of the main score (the one compared with the threshold)."""
    prefix: str
    """Prefix ``m`` of ``m_result``, ``m_threshold``, ``m_reason``, ``m_error``."""
    inputs: tuple[InputSpec, ...] = ()
    input_modes: tuple[tuple[str, ...], ...] = ()
    description: str = ""
    value_range: str = ""
    higher_is_better: bool = True
    default_threshold: float | None = None
    needs_judge: bool = False
    tier: Tier = "free"
    aggregators: tuple[str, ...] = ("mean", "pass_rate")
    """Names in :mod:`touchstone.stats.aggregators` applied to each score in the summary."""
    secondary: tuple[str, ...] = ()
    """Output keys of the other scores the metric reports (``rouge_precision``, ``mrr``...)."""
    lower_is_better: frozenset[str] = field(default_factory=frozenset)
    """Secondary scores for which lower is better (``holes``)."""

    def direction(self, score_name: str) -> bool:
        """Whether higher is better for the score ``score_name`` of this metric."""
        if score_name in self.lower_is_better:
            return False
        return self.higher_is_better if score_name == self.key else True


def check_options(evaluator: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """Raise :class:`UnknownOptionError` for the first option in ``given`` that is not in ``valid``,
    naming the closest valid ones (a typo such as ``thresold=4`` must not run silently with the
    default)."""
    valid = sorted(set(valid))
    for name in given:
        if name in valid:
            continue
        close = difflib.get_close_matches(name, valid, n=2, cutoff=0.6)
        hint = (
            f"did you mean {' or '.join(repr(c) for c in close)}?"
            if close
            else f"valid options: {', '.join(valid)}"
        )
        raise UnknownOptionError(f"{evaluator} got an unknown option {name!r}; {hint}")


def error_info(error: BaseException | str, kind: str | None = None) -> ErrorInfo:
    """The typed cause of a failed score: ``kind`` when given; else a string is an input problem, a
    judge client's failure a judge call, an exception the metric's own computation, unless the
    exception names its kind in an ``error_kind`` attribute."""
    if isinstance(error, str):
        return ErrorInfo(kind or ErrorKind.INPUT.value, error)
    if kind is None:
        kind = getattr(error, "error_kind", None)
        if not isinstance(kind, str):
            from touchstone.judges.errors import JudgeCallError

            kind = (
                ErrorKind.JUDGE_CALL.value
                if isinstance(error, JudgeCallError)
                else ErrorKind.COMPUTATION.value
            )
    return ErrorInfo(kind, describe_exception(error))


RESPONSE_AND_GROUND_TRUTHS = (
    InputSpec("response", "text", description="the application's answer"),
    InputSpec("ground_truth", "texts", description="the expected answer, or several"),
)
"""The inputs of every metric that compares a response with one or several reference answers."""

MODEL_BATCH_ROWS = 1024
"""``min_batch_rows`` of the local-model metrics: below this many rows per ``score_batch`` call a
model's batched forward passes lose efficiency (less length-sorting, more padding, more per-call
overhead); a hint for the engine's chunking."""


def _no_messages(value: Any) -> bool:
    """A conversation without messages, or an empty one, counts as a missing input (as the SDK counts
    it)."""
    return isinstance(value, Mapping) and (not value or ("messages" in value and not value["messages"]))


def describe_exception(exc: BaseException) -> str:
    """A short, secret-free description of why a score could not be obtained."""
    text = str(exc).strip() or exc.__class__.__name__
    return f"{exc.__class__.__name__}: {text}" if not text.startswith(exc.__class__.__name__) else text


class Evaluator:
    """Base class of every metric. Subclasses set the class attributes and implement ``_score``
    (CPU-bound) or ``_ascore`` (I/O-bound, with ``is_async = True``)."""

    metric: ClassVar[str] = ""
    """Registry name, e.g. ``f1_score``."""
    prefix: ClassVar[str] = ""
    """Output key prefix ``m`` of ``m_result``, ``m_threshold``, ``m_error``... The compatible SDK uses
    the main score key itself (``f1_score`` -> ``f1_score_result``)."""
    score_key: ClassVar[str] = ""
    """The main numeric output key (the one compared against the threshold)."""
    inputs: ClassVar[tuple[InputSpec, ...]] = ()
    description: ClassVar[str] = ""
    value_range: ClassVar[str] = ""
    needs_judge: ClassVar[bool] = False
    is_async: ClassVar[bool] = False
    higher_is_better: ClassVar[bool] = True
    default_threshold: ClassVar[float | None] = None
    min_batch_rows: ClassVar[int] = 8
    """Fewest rows the engine passes to one ``score_batch`` call (the engine otherwise sizes batches to
    about a quarter of a second of work, so scores are stored often). Model metrics raise it."""
    input_modes: ClassVar[tuple[tuple[str, ...], ...]] = ()
    """Alternative sets of required inputs (e.g. ``("query", "response")`` or ``("conversation",)``).
    Empty: the required ``inputs`` are the only mode."""

    tier: ClassVar[Tier] = "free"
    aggregators: ClassVar[tuple[str, ...]] = ("mean", "pass_rate")
    secondary: ClassVar[tuple[str, ...]] = ()
    """Output keys of the other scores the metric reports besides the main one."""
    lower_is_better: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, *, threshold: float | None = None) -> None:
        self.threshold: float | None = self.default_threshold if threshold is None else float(threshold)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None:
            cls.__init__ = _checking_options(init)  # type: ignore[method-assign]

    # ----------------------------------------------------------------- description
    @property
    def info(self) -> MetricInfo:
        """This metric's metadata (built once from the declarations, then kept with the instance)."""
        info: MetricInfo | None = self.__dict__.get("_info")
        if info is None:
            info = self.__dict__["_info"] = self.describe()
        return info

    def describe(self) -> MetricInfo:
        """The :class:`MetricInfo` of this instance (its declarations as one value)."""
        return MetricInfo(
            name=self.metric,
            key=self.score_key or self.metric,
            prefix=self.prefix or self.metric,
            inputs=tuple(self.inputs),
            input_modes=tuple(self.input_modes),
            description=self.description,
            value_range=self.value_range,
            higher_is_better=self.higher_is_better,
            default_threshold=self.default_threshold,
            needs_judge=self.needs_judge,
            tier=self.tier,
            aggregators=self.aggregators,
            secondary=tuple(self.secondary),
            lower_is_better=frozenset(self.lower_is_better),
        )

    def set_info(self, **changes: Any) -> None:
        """Change this instance's metadata (a metric defined at run time: a rubric, a function)."""
        self.__dict__["_info"] = replace(self.info, **changes)

    def required_modes(self) -> tuple[tuple[str, ...], ...]:
        if self.input_modes:
            return self.input_modes
        return (tuple(spec.name for spec in self.inputs if spec.required),)

    def input_spec(self, name: str) -> InputSpec | None:
        for spec in self.inputs:
            if spec.name == name:
                return spec
        return None

    def options(self) -> dict[str, Any]:
        """Everything needed to reproduce a score (provenance, stored with each run)."""
        return {"threshold": self.threshold}

    def aggregator_options(self) -> dict[str, Any]:
        """Options of the summary's aggregators (e.g. a safety metric's ``defect_level``)."""
        return {}

    # ----------------------------------------------------------------- calling
    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        """Score one row given as keyword inputs; the compatible SDK's flat dict."""
        inputs = self.check_call_inputs(kwargs)
        outcome = _run_coroutine(self._ascore(**inputs)) if self.is_async else self._score(**inputs)
        return self.as_outcome(outcome).to_sdk_outputs()

    async def acall(self, **kwargs: Any) -> dict[str, Any]:
        """Async twin of ``__call__``."""
        inputs = self.check_call_inputs(kwargs)
        return self.as_outcome(await self._ascore(**inputs)).to_sdk_outputs()

    def check_call_inputs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        known = {spec.name for spec in self.inputs}
        unknown = sorted(set(kwargs) - known)
        problems: list[Problem] = []
        if unknown:
            problems.append(
                Problem(self.metric, None, unknown[0], f"unexpected input; expected one of {sorted(known)}")
            )
        present = {k for k, v in kwargs.items() if v is not None}
        modes = self.required_modes()
        usable = {k for k in present if not _no_messages(kwargs[k])}
        missing_inputs = not any(set(mode) <= usable for mode in modes)
        if not any(set(mode) <= present for mode in modes):
            wanted = " or ".join("(" + ", ".join(mode) + ")" for mode in modes)
            missing = sorted(set(modes[0]) - present)
            problems.append(
                Problem(self.metric, None, missing[0] if missing else None, f"missing inputs; needs {wanted}")
            )
        for name in sorted(present & known):
            spec = self.input_spec(name)
            assert spec is not None
            err = check_value(spec.kind, kwargs[name])
            if err:
                problems.append(Problem(self.metric, None, name, err))
        if problems:
            # the SDK's classification: what a missing input is depends on the evaluator
            category, target = missing_input_classification(type(self))
            if not missing_inputs:
                category = ErrorCategory.INVALID_VALUE
            raise InputValidationError(problems, category=category, target=target)
        return {k: v for k, v in kwargs.items() if v is not None}

    # ----------------------------------------------------------------- engine entry points
    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        """Score many validated rows; a row that raises becomes a failed Score."""
        out: list[Outcome] = []
        for row in rows:
            try:
                out.append(self.as_outcome(self._score(**row)))
            except RunAbortedError:
                raise
            except Exception as exc:  # a failed score is data, recorded with its cause
                out.append(self.failure(exc))
        return out

    async def ascore(self, row: Mapping[str, Any]) -> Outcome:
        """Score one validated row asynchronously; failures become a failed Score."""
        try:
            return self.as_outcome(await self._ascore(**row))
        except RunAbortedError:
            raise  # every remaining row would fail the same way: stop the run
        except Exception as exc:
            return self.failure(exc)

    def as_outcome(self, value: Any) -> Outcome:
        """An :class:`Outcome` as it is, or one made from a plain dict (what a user's subclass or
        function may return): its main key and every other number become Scores, and an
        ``<prefix>_error`` value a failed Score."""
        if isinstance(value, Outcome):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"{self.metric} returned {type(value).__name__}; expected an Outcome or a dict")
        info = self.info
        error = value.get(f"{info.prefix}_error")
        if error:
            return Outcome([Score.failed(info.key, ErrorInfo(ErrorKind.COMPUTATION.value, str(error)),
                                         threshold=self.threshold)], value)
        scores: list[Score] = []
        main = value.get(info.key)
        if _is_number(main):
            passed = value.get(f"{info.prefix}_passed")
            scores.append(Score(info.key, main, passed=passed if isinstance(passed, bool) else None,
                                threshold=self.threshold))
        for key, v in value.items():
            if key != info.key and _is_number(v) and not key.endswith("_threshold"):
                scores.append(Score(key, v))
        return Outcome(scores, value)

    def corpus_metrics(
        self, inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Outcome]
    ) -> dict[str, float]:
        """Corpus-level figures (e.g. corpus BLEU, whose statistics are summed over rows, not averaged).

        Called by the summary with the validated inputs and outputs of the rows that scored; returns
        extra ``{key: value}`` reported as ``<evaluator name>.<key>``. Default: none."""
        return {}

    # ----------------------------------------------------------------- to implement
    # A subclass returns an Outcome, or a plain dict of outputs as the compatible SDK's evaluators
    # do: every caller passes the value through :meth:`as_outcome`.
    def _score(self, **inputs: Any) -> Outcome | Mapping[str, Any]:
        raise NotImplementedError

    async def _ascore(self, **inputs: Any) -> Outcome | Mapping[str, Any]:
        return self._score(**inputs)

    # ----------------------------------------------------------------- output helpers
    def passes(self, score: float) -> bool:
        assert self.threshold is not None
        return score >= self.threshold if self.higher_is_better else score <= self.threshold

    def result(
        self, score: float, *, reason: str | None = None, properties: Any = None, **extra: Any
    ) -> Outcome:
        """The Outcome of a scored row: the main Score (with pass/fail against the threshold), the
        secondary Scores the metric declares (values taken from ``extra``), and their SDK rendering:
        ``m``, ``m_score``, ``m_passed``, ``m_result``, ``m_reason``, ``m_status``, ``m_threshold``,
        ``m_properties`` (the pass/fail keys only when a threshold is set), then ``extra``."""
        if isinstance(score, float) and math.isnan(score):
            raise ValueError("score is NaN")
        info = self.info
        m = info.prefix
        out: dict[str, Any] = {info.key: score, f"{m}_score": score}
        passed: bool | None = None
        if self.threshold is not None:
            passed = self.passes(score)
            out[f"{m}_passed"] = passed
            out[f"{m}_result"] = "pass" if passed else "fail"
        out[f"{m}_reason"] = reason
        out[f"{m}_status"] = "completed"
        out[f"{m}_threshold"] = self.threshold
        out[f"{m}_properties"] = properties
        out.update(extra)
        scores = [Score(info.key, score, reason=reason, passed=passed, threshold=self.threshold,
                        properties=properties if isinstance(properties, dict) else None)]
        for name in info.secondary:
            value = out.get(name)
            if _is_number(value):
                flag = out.get(f"{name}_passed")
                scores.append(Score(name, value, passed=flag if isinstance(flag, bool) else None,
                                    threshold=_number_or_none(out.get(f"{name}_threshold"))))
        return Outcome(scores, out)

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outcome:
        """The Outcome of a row whose score could not be obtained: a failed Score with the typed
        cause, rendered as ``m_error`` (the message), ``m_status`` and ``m_threshold``."""
        info = self.info
        cause = error_info(error, kind)
        m = info.prefix
        out = {f"{m}_error": cause.message, f"{m}_status": "failed", f"{m}_threshold": self.threshold}
        return Outcome([Score.failed(info.key, cause, threshold=self.threshold)], out)

    @property
    def error_key(self) -> str:
        return f"{self.prefix}_error"


def _checking_options(init: Callable[..., None]) -> Callable[..., None]:
    """``init`` with an unknown keyword option reported as :class:`UnknownOptionError` naming the
    closest valid option, instead of Python's bare ``TypeError`` (constructors that take
    ``**kwargs`` check what they forward themselves)."""
    params = inspect.signature(init).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return init
    valid = [
        n for n, p in params.items() if n != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            check_options(type(self).__name__, kwargs, valid)
        init(self, *args, **kwargs)

    return checked


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _number_or_none(value: Any) -> float | None:
    return float(value) if _is_number(value) else None


def _run_coroutine(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from inside a running loop (e.g. a notebook): run on a private loop in a thread.
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class FunctionEvaluator(Evaluator):
    """Wraps a plain Python callable (sync or async) as an evaluator; inputs come from its signature.

    A dict return value is used as the outputs; a number ``x`` becomes ``{<name>: x}``.
    """

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        super().__init__()
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "function"))
        target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004
        params = inspect.signature(target).parameters
        specs = []
        for p in params.values():
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name == "self":
                continue
            specs.append(InputSpec(p.name, "any", required=p.default is inspect.Parameter.empty))
        self._inputs = tuple(specs)
        self._accepts_kwargs = any(p.kind == p.VAR_KEYWORD for p in params.values())
        self._async = inspect.iscoroutinefunction(target)

        # instance-level values of the class-level declarations
        self.inputs = self._inputs  # type: ignore[misc]
        self.metric = self.prefix = self.name  # type: ignore[misc]
        self.is_async = self._async  # type: ignore[misc]

    def options(self) -> dict[str, Any]:
        return {
            "function": f"{getattr(self.fn, '__module__', '?')}.{getattr(self.fn, '__qualname__', self.name)}"
        }

    def _wrap(self, value: Any) -> Outcome:
        if isinstance(value, Mapping):
            return self.as_outcome(dict(value))
        return self.as_outcome({self.name: value})

    def _score(self, **inputs: Any) -> Outcome:
        return self._wrap(self.fn(**inputs))

    async def _ascore(self, **inputs: Any) -> Outcome:
        if self._async:
            return self._wrap(await self.fn(**inputs))
        return self._score(**inputs)


EvaluatorLike = Evaluator | Callable[..., Any]


def as_evaluator(obj: EvaluatorLike, name: str) -> Evaluator:
    """Accept an :class:`Evaluator` or any callable (the compatible SDK accepts plain functions)."""
    if isinstance(obj, Evaluator):
        return obj
    if callable(obj):
        return FunctionEvaluator(obj, name=name)
    raise TypeError(f"evaluator {name!r} is neither an Evaluator nor callable: {type(obj).__name__}")
