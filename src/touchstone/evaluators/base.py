"""The evaluator protocol.

An evaluator is a small object that declares its inputs, is callable on keyword inputs (the shape of
``azure-ai-evaluation``'s evaluators) and returns a flat dict of output keys following SPEC 3:
``<score_key>`` (the score), ``<prefix>_result`` ("pass"/"fail"), ``<prefix>_threshold``,
``<prefix>_reason`` for judged metrics, and ``<prefix>_error`` when no score could be obtained.

The engine never calls ``__call__``; it calls :meth:`Evaluator.score_batch` for CPU-bound metrics
(many rows per call, so per-row overhead stays small) and :meth:`Evaluator.ascore` for I/O-bound ones
(``is_async = True``), many at once. Both record a failing row as a failure dict, never as NaN.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from touchstone.data.kinds import InputKind, check_value
from touchstone.errors import InputValidationError, Problem, RunAbortedError

Outputs = dict[str, Any]


@dataclass(frozen=True)
class InputSpec:
    """One named input of an evaluator."""

    name: str
    kind: InputKind = "text"
    required: bool = True
    description: str = ""


RESPONSE_AND_GROUND_TRUTHS = (
    InputSpec("response", "text", description="the application's answer"),
    InputSpec("ground_truth", "texts", description="the expected answer, or several"),
)
"""The inputs of every metric that compares a response with one or several reference answers."""

MODEL_BATCH_ROWS = 1024
"""``min_batch_rows`` of the local-model metrics: below this many rows per ``score_batch`` call a
model's batched forward passes lose efficiency (less length-sorting, more padding, more per-call
overhead); a hint for the engine's chunking."""


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

    def __init__(self, *, threshold: float | None = None) -> None:
        self.threshold: float | None = self.default_threshold if threshold is None else float(threshold)

    # ----------------------------------------------------------------- description
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

    # ----------------------------------------------------------------- calling
    def __call__(self, **kwargs: Any) -> Outputs:
        inputs = self.check_call_inputs(kwargs)
        if self.is_async:
            return _run_coroutine(self._ascore(**inputs))
        return self._score(**inputs)

    async def acall(self, **kwargs: Any) -> Outputs:
        """Async twin of ``__call__``."""
        inputs = self.check_call_inputs(kwargs)
        return await self._ascore(**inputs)

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
        if not any(set(mode) <= present for mode in modes):
            wanted = " or ".join("(" + ", ".join(mode) + ")" for mode in modes)
            missing = sorted(set(modes[0]) - present)
            problems.append(Problem(self.metric, None, missing[0] if missing else None, f"missing inputs; needs {wanted}"))
        for name in sorted(present & known):
            spec = self.input_spec(name)
            assert spec is not None
            err = check_value(spec.kind, kwargs[name])
            if err:
                problems.append(Problem(self.metric, None, name, err))
        if problems:
            raise InputValidationError(problems)
        return {k: v for k, v in kwargs.items() if v is not None}

    # ----------------------------------------------------------------- engine entry points
    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outputs]:
        """Score many validated rows; a row that raises becomes a failure dict."""
        out: list[Outputs] = []
        for row in rows:
            try:
                out.append(self._score(**row))
            except RunAbortedError:
                raise
            except Exception as exc:  # a failed score is data, recorded with its cause
                out.append(self.failure(exc))
        return out

    async def ascore(self, row: Mapping[str, Any]) -> Outputs:
        """Score one validated row asynchronously; failures become a failure dict."""
        try:
            return await self._ascore(**row)
        except RunAbortedError:
            raise  # every remaining row would fail the same way: stop the run
        except Exception as exc:
            return self.failure(exc)

    def corpus_metrics(
        self, inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Outputs]
    ) -> dict[str, float]:
        """Corpus-level figures (e.g. corpus BLEU, whose statistics are summed over rows, not averaged).

        Called by the summary with the validated inputs and outputs of the rows that scored; returns
        extra ``{key: value}`` reported as ``<evaluator name>.<key>``. Default: none."""
        return {}

    # ----------------------------------------------------------------- to implement
    def _score(self, **inputs: Any) -> Outputs:
        raise NotImplementedError

    async def _ascore(self, **inputs: Any) -> Outputs:
        return self._score(**inputs)

    # ----------------------------------------------------------------- output helpers
    def passes(self, score: float) -> bool:
        assert self.threshold is not None
        return score >= self.threshold if self.higher_is_better else score <= self.threshold

    def result(
        self, score: float, *, reason: str | None = None, properties: Any = None, **extra: Any
    ) -> Outputs:
        """The compatible SDK's full key set for the main score ``m`` (= ``prefix``): ``m``,
        ``m_score``, ``m_passed``, ``m_result``, ``m_reason``, ``m_status``, ``m_threshold``,
        ``m_properties`` (the pass/fail keys only when a threshold is set), then ``extra``."""
        if isinstance(score, float) and math.isnan(score):
            raise ValueError("score is NaN")
        m = self.prefix
        out: Outputs = {self.score_key: score, f"{m}_score": score}
        if self.threshold is not None:
            passed = self.passes(score)
            out[f"{m}_passed"] = passed
            out[f"{m}_result"] = "pass" if passed else "fail"
        out[f"{m}_reason"] = reason
        out[f"{m}_status"] = "completed"
        out[f"{m}_threshold"] = self.threshold
        out[f"{m}_properties"] = properties
        out.update(extra)
        return out

    def failure(self, error: BaseException | str) -> Outputs:
        """Outputs of a row whose score could not be obtained: ``m_error`` holds the cause."""
        message = error if isinstance(error, str) else describe_exception(error)
        m = self.prefix
        return {f"{m}_error": message, f"{m}_status": "failed", f"{m}_threshold": self.threshold}

    @property
    def error_key(self) -> str:
        return f"{self.prefix}_error"


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
        return {"function": f"{getattr(self.fn, '__module__', '?')}.{getattr(self.fn, '__qualname__', self.name)}"}

    def _wrap(self, value: Any) -> Outputs:
        if isinstance(value, Mapping):
            return dict(value)
        return {self.name: value}

    def _score(self, **inputs: Any) -> Outputs:
        return self._wrap(self.fn(**inputs))

    async def _ascore(self, **inputs: Any) -> Outputs:
        if self._async:
            return self._wrap(await self.fn(**inputs))
        return self._score(**inputs)


EvaluatorLike = Evaluator | Callable[..., Any]
Status = Literal["ok", "failed"]


def as_evaluator(obj: EvaluatorLike, name: str) -> Evaluator:
    """Accept an :class:`Evaluator` or any callable (the compatible SDK accepts plain functions)."""
    if isinstance(obj, Evaluator):
        return obj
    if callable(obj):
        return FunctionEvaluator(obj, name=name)
    raise TypeError(f"evaluator {name!r} is neither an Evaluator nor callable: {type(obj).__name__}")
