"""Comparisons of stored runs: two runs of the same rows (:func:`compare_runs`,
:func:`rows_changed_most`) and a baseline run against a jailbroken one (:func:`compare_jailbreak`)."""

from touchstone.compare.jailbreak import CategoryComparison, JailbreakComparison, compare_jailbreak
from touchstone.compare.matching import UnknownRunError
from touchstone.compare.runs import (
    MetricComparison,
    RowChange,
    RunComparison,
    compare_runs,
    rows_changed_most,
)

__all__ = [
    "CategoryComparison",
    "JailbreakComparison",
    "MetricComparison",
    "RowChange",
    "RunComparison",
    "UnknownRunError",
    "compare_jailbreak",
    "compare_runs",
    "rows_changed_most",
]
