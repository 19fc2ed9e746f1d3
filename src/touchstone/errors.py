"""Typed exceptions of the public surface.

Every class here derives from :class:`~touchstone._exceptions.EvaluationException` (the compatible
SDK's base, with ``category``, ``blame`` and ``target``), and keeps the built-in base it had before
(``ValueError``, ``TypeError``, ``RuntimeError``), so both ``except EvaluationException`` and
``except ValueError`` code work. Each class has the SDK's classification for the situation as its
default; a raising place may pass a more precise one (``category=ErrorCategory.MISSING_FIELD``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from touchstone._exceptions import ErrorBlame, ErrorCategory, ErrorTarget, EvaluationException


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: where it is and what was expected."""

    source: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        parts = [self.source]
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.field:
            parts.append(f'field "{self.field}"')
        return ", ".join(parts) + ": " + self.message


MAX_REPORTED_PROBLEMS = 20


class TouchstoneError(EvaluationException):
    """Base of touchstone's typed errors: an :class:`EvaluationException` whose ``str()`` is the bare
    message, and whose category and blame default to the class's own (:attr:`default_category`,
    :attr:`default_blame`)."""

    show_blame: ClassVar[bool] = False
    default_category: ClassVar[ErrorCategory] = ErrorCategory.UNKNOWN
    default_blame: ClassVar[ErrorBlame] = ErrorBlame.UNKNOWN

    def __init__(
        self,
        message: str = "",
        *args: Any,
        category: ErrorCategory | None = None,
        blame: ErrorBlame | None = None,
        target: ErrorTarget = ErrorTarget.UNKNOWN,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            message,
            *args,
            category=category or self.default_category,
            blame=blame or self.default_blame,
            target=target,
            **kwargs,
        )


class InputValidationError(TouchstoneError, ValueError):
    """The input data or configuration is invalid; nothing was evaluated and nothing was spent.

    ``problems`` lists every problem found; the message shows the first 20 and the total count.
    Category ``INVALID_VALUE`` by default, ``MISSING_FIELD`` where a required input is absent (as the
    SDK classifies them); blame ``USER_ERROR``.
    """

    default_category = ErrorCategory.INVALID_VALUE
    default_blame = ErrorBlame.USER_ERROR

    def __init__(
        self,
        problems: Sequence[Problem] | str,
        *,
        category: ErrorCategory | None = None,
        blame: ErrorBlame | None = None,
        target: ErrorTarget = ErrorTarget.UNKNOWN,
        **kwargs: Any,
    ) -> None:
        if isinstance(problems, str):
            problems = [Problem(source="input", line=None, field=None, message=problems)]
        self.problems: list[Problem] = list(problems)
        super().__init__(self._render(), category=category, blame=blame, target=target, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from the problems (not the rendered text, which would be wrapped in a new Problem)
        return (type(self), (self.problems,), self.__dict__)

    def _render(self) -> str:
        # the same problem on many rows of one file reads as one line naming the rows
        groups: dict[tuple[str, str | None, str], list[Problem]] = {}
        for p in self.problems:
            groups.setdefault((p.source, p.field, p.message), []).append(p)
        entries: list[str] = []
        for (source, field, message), same in groups.items():
            lines = [p.line for p in same if p.line is not None]
            if len(same) >= GROUPED_PROBLEMS and len(lines) == len(same):
                where = f"{source}, {len(lines)} rows ({_line_list(lines)})"
                entries.append(where + (f', field "{field}"' if field else "") + ": " + message)
            else:
                entries.extend(str(p) for p in same)
        shown = entries[:MAX_REPORTED_PROBLEMS]
        rendered = list(shown)
        if len(entries) > len(shown):
            more = len(entries) - len(shown)
            rendered.append(f"... and {more} more ({len(self.problems)} problems in all).")
        elif len(self.problems) > 1:
            rendered.append(f"({len(self.problems)} problems in all.)")
        return "\n".join(rendered)


GROUPED_PROBLEMS = 3
"""The same problem on at least this many rows is said once, naming the rows."""


def _line_list(lines: list[int]) -> str:
    """``lines 1-3, 7`` (consecutive lines as ranges; at most eight ranges, then "...")."""
    ranges: list[str] = []
    start = prev = lines[0]
    for line in [*lines[1:], None]:
        if line is not None and line == prev + 1:
            prev = line
            continue
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        if line is not None:
            start = prev = line
    more = ", ..." if len(ranges) > 8 else ""
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(ranges[:8]) + more


class UnknownMetricError(InputValidationError):
    """A metric name that is not in the registry."""


class ConfigurationError(TouchstoneError, ValueError):
    """The evaluation is configured in a way that cannot run (missing judge, bad option).
    Category ``INVALID_VALUE``, blame ``USER_ERROR``."""

    default_category = ErrorCategory.INVALID_VALUE
    default_blame = ErrorBlame.USER_ERROR


class UnknownOptionError(ConfigurationError, TypeError):
    """An evaluator was given an option it does not have (the message names the closest valid one).
    A ``TypeError`` too, as Python raises for an unexpected keyword argument. Category
    ``UNKNOWN_FIELD``."""

    default_category = ErrorCategory.UNKNOWN_FIELD


class RunAbortedError(TouchstoneError, RuntimeError):
    """A run was stopped early because every remaining row would fail the same way (e.g. bad API key).
    Category ``FAILED_EXECUTION``; blame ``UNKNOWN`` unless the raiser knows better."""

    default_category = ErrorCategory.FAILED_EXECUTION


class EvaluatorFailedError(TouchstoneError, RuntimeError):
    """``evaluate(fail_on_evaluator_errors=True)`` and an evaluator failed on a row: category
    ``FAILED_EXECUTION``, blame ``UNKNOWN``, as the SDK classifies it."""

    default_category = ErrorCategory.FAILED_EXECUTION


class StoreError(TouchstoneError, RuntimeError):
    """The run store could not be read or written during a run (read-only, damaged, locked by another
    process for too long, a full disk). The message says which and names the store; the command line
    exits with status 1 on it. Category ``FAILED_EXECUTION``, blame ``SYSTEM_ERROR``."""

    default_category = ErrorCategory.FAILED_EXECUTION
    default_blame = ErrorBlame.SYSTEM_ERROR


class OutputWriteError(TouchstoneError, OSError):
    """An output file could not be written (a full disk, no permission). Files are written whole or
    not at all: nothing half-written is left in place. Category ``FAILED_EXECUTION``."""

    default_category = ErrorCategory.FAILED_EXECUTION
    default_blame = ErrorBlame.SYSTEM_ERROR


def describe_os_error(exc: BaseException) -> str:
    """Why a file location could not be used, in a few words (``strerror (filename)`` for an OS error)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} ({exc.filename})" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


# The SDK classifies a call with missing inputs by evaluator: its prompt-based quality and agent
# evaluators say MISSING_FIELD (target: the evaluator), the others INVALID_VALUE (target:
# CONVERSATION). Keyed by class name so that a user's subclass inherits its base's classification.
_MISSING_FIELD_EVALUATORS = frozenset(
    {
        "CoherenceEvaluator",
        "FluencyEvaluator",
        "GroundednessEvaluator",
        "IntentResolutionEvaluator",
        "RelevanceEvaluator",
        "SimilarityEvaluator",
        "TaskAdherenceEvaluator",
        "ToolCallAccuracyEvaluator",
    }
)


def missing_input_classification(cls: type) -> tuple[ErrorCategory, ErrorTarget]:
    """The SDK's category and target for an evaluator of class ``cls`` called without its inputs."""
    for klass in cls.__mro__:
        if klass.__name__ in _MISSING_FIELD_EVALUATORS:
            return ErrorCategory.MISSING_FIELD, ErrorTarget(klass.__name__)
    return ErrorCategory.INVALID_VALUE, ErrorTarget.CONVERSATION


_warned_upload = False


def warn_nothing_uploaded(option: str = "azure_ai_project") -> None:
    """Say once per process that ``option`` (the SDK's link to an Azure AI project) is accepted and
    ignored: touchstone keeps results locally (its run store) and uploads nothing."""
    global _warned_upload
    if _warned_upload:
        return
    _warned_upload = True
    warnings.warn(
        f"{option} is accepted for compatibility and ignored: touchstone uploads nothing; results stay "
        "in the returned value, output_path and the local run store",
        UserWarning,
        stacklevel=3,
    )


class FailedScoresWarning(UserWarning):
    """A run in Python finished with scores that could not be obtained: said once per run, with the
    count and the first cause (the rows carry each failure in ``<m>_error``; the command line shows
    them in its table instead)."""
