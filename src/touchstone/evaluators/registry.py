"""Metric name -> how to build it: an evaluator class, or a :class:`PromptMetric` value (a judged metric
that is only a prompt). Adding a metric is one class with ``@register``, or one ``register(value)``.

The registry finds the built-in metrics itself, without a hand-kept list: the first time it is asked
it imports every module of the ``touchstone.evaluators`` package (their ``@register`` lines run), then
loads the ``touchstone.metrics`` entry points of installed packages (an entry point names an
evaluator class, a :class:`PromptMetric`, or a module whose import registers its metrics). Nothing is
imported before that, so a command that never asks for a metric (``touchstone --help``) pays nothing.
Heavy dependencies stay lazy: modules must not import them at module level."""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, TypeVar

from touchstone.errors import Problem, UnknownMetricError
from touchstone.evaluators.base import Evaluator

if TYPE_CHECKING:
    from touchstone.evaluators.judge.prompt_metric import PromptMetric

    MetricEntry = type[Evaluator] | PromptMetric
    """What the registry holds for a metric: its evaluator class, or its value."""

ENTRY_POINT_GROUP = "touchstone.metrics"
"""The entry-point group third-party packages declare their metrics in (``pyproject.toml``:
``[project.entry-points."touchstone.metrics"]``, ``name = "package.module:Thing"``)."""

_REGISTRY: dict[str, MetricEntry] = {}
_loaded = False
E = TypeVar("E", bound="type[Evaluator] | PromptMetric")


def register(entry: E) -> E:
    """Make a metric available under its name: usable as a class decorator (``@register``) or
    called with a :class:`PromptMetric` value. Registering the same thing twice is harmless; two
    different metrics with one name are an error."""
    name = entry.metric
    if not name:
        raise ValueError(f"{entry!r} has no metric name")
    known = _REGISTRY.get(name)
    if known is not None and known is not entry and known != entry:
        raise ValueError(f"metric {name!r} registered twice")
    _REGISTRY[name] = entry
    return entry


def _import_package_modules() -> None:
    """Import every module of ``touchstone.evaluators`` (each registers its own metrics)."""
    package = importlib.import_module("touchstone.evaluators")
    for module in pkgutil.walk_packages(package.__path__, prefix="touchstone.evaluators."):
        importlib.import_module(module.name)


def _is_metric(thing: Any) -> bool:
    """Whether an entry point's object is a metric: an evaluator class, or a value that builds one
    (a :class:`PromptMetric`: a metric name and a ``from_options`` factory)."""
    if isinstance(thing, type):
        return issubclass(thing, Evaluator)
    return isinstance(getattr(thing, "metric", None), str) and callable(getattr(thing, "from_options", None))


def _load_entry_points() -> None:
    """Register what third-party packages declare in the ``touchstone.metrics`` group: a metric
    (an evaluator class or a prompt metric value), or a module whose import registered its own."""
    for point in entry_points(group=ENTRY_POINT_GROUP):
        thing = point.load()
        if _is_metric(thing):
            register(thing)


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        _import_package_modules()
        _load_entry_points()


def available() -> dict[str, MetricEntry]:
    """All registered metrics, by name, sorted."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> MetricEntry:
    """The evaluator class (or prompt metric) for ``name``; an unknown name raises with the closest
    valid names."""
    metrics = available()
    if name in metrics:
        return metrics[name]
    close = difflib.get_close_matches(name, list(metrics), n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"valid names: {', '.join(metrics)}"
    raise UnknownMetricError([Problem("--metrics", None, None, f"unknown metric {name!r}; {hint}")])


class _WithOptions:
    """The class as a ``from_options`` factory sees it, constructing with the user's own options added
    (its attributes are the class's), so each factory keeps its own defaults and checks."""

    def __init__(self, cls: MetricEntry, extra: dict[str, Any]) -> None:
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
    assert isinstance(cls, type)  # a prompt metric names its options
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

    assert isinstance(cls, type)  # a prompt metric has a factory
    params = inspect.signature(cls.__init__).parameters
    accepted = {k: v for k, v in options.items() if k in params and v is not None}
    return cls(**{**accepted, **extra})
