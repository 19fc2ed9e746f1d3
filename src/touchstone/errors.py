"""Typed exceptions of the public surface."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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


class InputValidationError(ValueError):
    """The input data or configuration is invalid; nothing was evaluated and nothing was spent.

    ``problems`` lists every problem found; the message shows the first 20 and the total count.
    """

    def __init__(self, problems: Sequence[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem(source="input", line=None, field=None, message=problems)]
        self.problems: list[Problem] = list(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        shown = self.problems[:MAX_REPORTED_PROBLEMS]
        lines = [str(p) for p in shown]
        if len(self.problems) > len(shown):
            lines.append(
                f"... and {len(self.problems) - len(shown)} more problems ({len(self.problems)} in all)."
            )
        elif len(self.problems) > 1:
            lines.append(f"({len(self.problems)} problems in all.)")
        return "\n".join(lines)


class UnknownMetricError(InputValidationError):
    """A metric name that is not in the registry."""


class ConfigurationError(ValueError):
    """The evaluation is configured in a way that cannot run (missing judge, bad option)."""


class UnknownOptionError(ConfigurationError, TypeError):
    """An evaluator was given an option it does not have (the message names the closest valid one).
    A ``TypeError`` too, as Python raises for an unexpected keyword argument."""


class RunAbortedError(RuntimeError):
    """A run was stopped early because every remaining row would fail the same way (e.g. bad API key)."""


def describe_os_error(exc: BaseException) -> str:
    """Why a file location could not be used, in a few words (``strerror (filename)`` for an OS error)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror} ({exc.filename})" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
