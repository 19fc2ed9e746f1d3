"""Executors: where the engine's work runs.

The engine depends on the :class:`Executor` protocol (:mod:`.base`) and picks an implementation with
:func:`make_executor` (:mod:`.choice`): :class:`LocalExecutor` (:mod:`.local`) runs batches in a
worker thread, or in a process pool on large inputs, and async jobs on the running event loop;
:class:`RayExecutor` (:mod:`.ray.executor`) implements the same protocol on a Ray cluster, and
:mod:`.ray.data` / :mod:`.ray.files` let Ray Data read a run's input there. What a worker runs, in
either place, is in :mod:`.scoring`.

``from touchstone.engine.executors import RayExecutor`` is the public path of the Ray executor; the
Ray names are loaded on first use, so importing this package never imports Ray.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from touchstone.engine.executors.base import Executor, Plan, ScoredChunk, WireRow
from touchstone.engine.executors.choice import ExecutorChoice, is_ray_dataset, make_executor, reads_with_ray
from touchstone.engine.executors.local import INHERIT_MAX_ROWS, LocalExecutor, default_processes
from touchstone.engine.executors.scoring import direct_inputs, score_wire, score_with_usage

if TYPE_CHECKING:
    from touchstone.engine.executors.ray.connect import import_ray
    from touchstone.engine.executors.ray.data import open_dataset
    from touchstone.engine.executors.ray.executor import RayExecutor

_LAZY = {
    "RayExecutor": "touchstone.engine.executors.ray.executor",
    "import_ray": "touchstone.engine.executors.ray.connect",
    "open_dataset": "touchstone.engine.executors.ray.data",
}
"""Names loaded on first use: the Ray executor's modules (Ray itself is imported only when used)."""

__all__ = [
    "INHERIT_MAX_ROWS",
    "Executor",
    "ExecutorChoice",
    "LocalExecutor",
    "Plan",
    "RayExecutor",
    "ScoredChunk",
    "WireRow",
    "default_processes",
    "direct_inputs",
    "import_ray",
    "is_ray_dataset",
    "make_executor",
    "open_dataset",
    "reads_with_ray",
    "score_wire",
    "score_with_usage",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
