"""The names ``evaluate(**options)`` takes, checked before anything is loaded or called.

Every extra option of ``evaluate()`` is read by someone: the judge session (each field of
:class:`~touchstone.judges.config.JudgeSettings`, or ``judge_settings`` whole), the run itself
(``target_concurrency``, ``workers_async``, ``retry_failed``), the command line and the monitor
(``sampling``, ``monitor``: kept in the run's configuration), or the compatible SDK's callers
(``azure_ai_project``, ``tags``, and its private switches, accepted and ignored). A name outside
these is a mistake (``concurency=4`` would run with the default concurrency): it raises
:class:`~touchstone.errors.UnknownOptionError` naming the closest valid one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from touchstone.evaluators.base import check_options
from touchstone.judges.config import JudgeSettings

RUN_OPTIONS = frozenset({
    "judge_settings",  # a JudgeSettings object or dict, under the individual settings
    "target_concurrency",  # target calls at once (engine/run/target_pass.py)
    "workers_async",  # I/O-bound jobs at once (engine/run/judge_pass.py)
    "retry_failed",  # which stored failures a resume scores again (engine/run/resume.py)
    "sampling",  # the CLI's description of a sampled run, kept in its configuration
    "monitor",  # the monitor's window, kept in its configuration
})
"""Options the run reads besides the judge settings."""

SDK_OPTIONS = frozenset({
    "azure_ai_project",  # nothing is uploaded: a warning says so
    "tags",
    "user_agent",
    "_use_pf_client",
    "_use_run_submitter_client",
})
"""Keyword arguments SDK users pass to its ``evaluate()``; accepted, and kept in the run's configuration."""


def known_options() -> frozenset[str]:
    """Every name ``evaluate(**options)`` accepts."""
    return frozenset(f.name for f in fields(JudgeSettings)) | RUN_OPTIONS | SDK_OPTIONS


def check_evaluate_options(given: Iterable[str]) -> None:
    """Raise :class:`~touchstone.errors.UnknownOptionError` for the first name in ``given`` that
    ``evaluate()`` does not take, naming the closest valid one."""
    check_options("evaluate()", given, known_options())
