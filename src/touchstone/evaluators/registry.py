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


class _WithOptions:
    """The class as a ``from_options`` factory sees it, constructing with the user's own options added
    (its attributes are the class's), so each factory keeps its own defaults and checks."""

    def __init__(self, cls: type[Evaluator], extra: dict[str, Any]) -> None:
        self._cls, self._extra = cls, extra

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cls, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Evaluator:
        return self._cls(*args, **{**kwargs, **self._extra})


def option_names(name: str) -> tuple[str, ...]:
    """The keyword options the metric ``name``'s constructor takes (what ``overrides`` may set)."""
    import inspect

    cls = get(name)
    names_of = getattr(cls, "option_names", None)
    if names_of is not None:
        return tuple(names_of())
    params = inspect.signature(cls.__init__).parameters.values()
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in params if p.kind in kinds and p.name not in ("self", "model_config"))


def check_overrides(name: str, overrides: dict[str, Any], source: str = "options") -> None:
    """Raise ConfigurationError naming the closest valid option when ``overrides`` has a key the metric
    ``name`` does not take."""
    from touchstone.errors import ConfigurationError

    valid = option_names(name)
    for key in overrides:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}?" if close else f"valid options: {', '.join(valid) or 'none'}"
            raise ConfigurationError(f"{source}: {name} has no option {key!r}; {hint}")


def create(name: str, *, overrides: dict[str, Any] | None = None, **options: Any) -> Evaluator:
    """Instantiate the metric ``name`` with ``options`` (threshold, judge configuration...).

    Each class decides which options it takes through its ``from_options`` class method when it has
    one, otherwise through its constructor (options it does not take are ignored: they are the run's
    shared options). ``overrides`` are the user's own options for this metric (``--metric-option``):
    every key must be one the constructor takes, and they win over ``options``."""
    cls = get(name)
    extra = dict(overrides or {})
    check_overrides(name, extra)
    factory = getattr(cls, "from_options", None)
    if factory is not None:
        if extra:
            return factory.__func__(_WithOptions(cls, extra), **options)  # type: ignore[no-any-return]
        return factory(**options)  # type: ignore[no-any-return,unused-ignore]
    import inspect

    params = inspect.signature(cls.__init__).parameters
    accepted = {k: v for k, v in options.items() if k in params and v is not None}
    return cls(**{**accepted, **extra})
