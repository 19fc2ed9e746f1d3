"""Metric name -> evaluator class. Adding a metric is one class and one ``@register`` line; modules
listed in ``_MODULES`` are imported on first use so the registry is complete without import cycles.
Heavy dependencies stay lazy: modules must not import them at module level."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from touchstone.errors import Problem, UnknownMetricError
from touchstone.evaluators.base import Evaluator

_REGISTRY: dict[str, type[Evaluator]] = {}
_MODULES = [
    "touchstone.evaluators.text",
    "touchstone.evaluators.overlap",
    "touchstone.evaluators.ranking",
    "touchstone.evaluators.semantic",
    "touchstone.evaluators.quality",
    "touchstone.evaluators.retrieval_judge",
    "touchstone.evaluators.bertscore",
    "touchstone.evaluators.perplexity",
    "touchstone.evaluators.agent",
    "touchstone.evaluators.safety",
    "touchstone.evaluators.rag.metrics",
    "touchstone.evaluators.rag.relevance_metrics",
    "touchstone.evaluators.groundedness_pro",
    "touchstone.evaluators.summary_quality",
    "touchstone.evaluators.signals",
]
_loaded = False


def register(cls: type[Evaluator]) -> type[Evaluator]:
    """Class decorator: make ``cls`` available under ``cls.metric``."""
    if not cls.metric:
        raise ValueError(f"{cls.__name__} has no metric name")
    if cls.metric in _REGISTRY and _REGISTRY[cls.metric] is not cls:
        raise ValueError(f"metric {cls.metric!r} registered twice")
    _REGISTRY[cls.metric] = cls
    return cls


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in _MODULES:
            importlib.import_module(module)
        _loaded = True


def available() -> dict[str, type[Evaluator]]:
    """All registered metrics, by name, sorted."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> type[Evaluator]:
    """The evaluator class for ``name``; an unknown name raises with the closest valid names."""
    metrics = available()
    if name in metrics:
        return metrics[name]
    close = difflib.get_close_matches(name, list(metrics), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"valid names: {', '.join(metrics)}"
    raise UnknownMetricError([Problem("--metrics", None, None, f"unknown metric {name!r}; {hint}")])


def create(name: str, **options: Any) -> Evaluator:
    """Instantiate the metric ``name`` with ``options`` (threshold, judge configuration...).

    Each class decides which options it takes through its ``from_options`` class method when it has
    one, otherwise through its constructor (options it does not take are ignored)."""
    cls = get(name)
    factory = getattr(cls, "from_options", None)
    if factory is not None:
        return factory(**options)  # type: ignore[no-any-return,unused-ignore]
    import inspect

    params = inspect.signature(cls.__init__).parameters
    accepted = {k: v for k, v in options.items() if k in params and v is not None}
    return cls(**accepted)
