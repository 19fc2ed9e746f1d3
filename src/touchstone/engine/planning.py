"""From the choices of a user (metric names, thresholds, judge flags, a stored run to resume) to what
``evaluate()`` takes: built evaluators, their configuration and the judge options.

The command line parses its flags and calls these; any other front end (a notebook helper, a service)
can do the same and get the same runs. Nothing here prints or exits.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# the preset table moved to engine/presets.py; these names stay importable from here
from touchstone.engine.presets import PRESETS as PRESETS
from touchstone.engine.presets import Preset as Preset
from touchstone.engine.presets import PresetPlan as PresetPlan
from touchstone.engine.presets import resolve
from touchstone.errors import ConfigurationError, InputValidationError, Problem


@dataclass(frozen=True)
class JudgeChoice:
    """How the user named the judge model: each field None when not given (the environment fills in)."""

    model: str | None = None
    base_url: str | None = None
    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    provider: str | None = None

    @property
    def names_azure(self) -> bool:
        return bool(self.azure_endpoint or self.azure_deployment)

    @property
    def names_openai(self) -> bool:
        return bool(self.model or self.base_url)


@dataclass(frozen=True)
class StoredRunSettings:
    """What a stored run was started with, enough to start it again the same way.

    ``judge`` carries no secret: keys come from the environment again when the run resumes."""

    run_id: str
    metric_names: list[str]
    thresholds: dict[str, float]
    evaluator_config: dict[str, Any]
    judge: Any = None
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class EvaluationPlan:
    """Everything ``evaluate()`` needs besides the data: ``evaluators`` by name, ``evaluator_config``
    (column mappings), ``judge_options`` (settings of the judge session) and ``resume`` (a run id)."""

    evaluators: dict[str, Any]
    evaluator_config: dict[str, Any]
    judge_options: dict[str, Any] = field(default_factory=dict)
    judge: Any = None
    resume: str | None = None

    def evaluate_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``evaluate()`` that this plan decides."""
        return {
            "evaluators": self.evaluators,
            "evaluator_config": self.evaluator_config,
            "resume": self.resume,
            **self.judge_options,
        }


def column_mapping_config(maps: Mapping[str, str]) -> dict[str, Any]:
    """An ``evaluator_config`` applying ``INPUT -> COLUMN`` to every evaluator; a value already written
    as a reference (``${target.x}``, ``${data.y}``) is kept, a bare column name means ``${data.COLUMN}``."""
    column_mapping = {k: v if v.startswith("${") else "${data." + v + "}" for k, v in maps.items()}
    return {"default": {"column_mapping": column_mapping}} if column_mapping else {}


def judge_options(
    *,
    concurrency: int | None = None,
    cache: bool | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    http_transport: str | None = None,
    hedge: bool | None = None,
) -> dict[str, Any]:
    """The judge-session options of ``evaluate()`` that were actually given (None means: the default)."""
    given = {
        "concurrency": concurrency,
        "cache": cache,
        "timeout": timeout,
        "max_retries": max_retries,
        "http_transport": http_transport,
        "hedge": hedge,
    }
    return {k: v for k, v in given.items() if v is not None}


def parse_metric_options(
    items: Sequence[str] | None, option: str = "--metric-option"
) -> dict[str, dict[str, Any]]:
    """``METRIC.KEY=VALUE`` items (one per item; a value is read as YAML, so ``2``, ``0.5``, ``true``,
    ``[0.5, 0.5]`` and plain words all work) as ``{metric: {key: value}}``."""
    import yaml

    parsed: dict[str, dict[str, Any]] = {}
    for item in items or []:
        target, sep, raw = item.partition("=")
        metric, dot, key = target.strip().rpartition(".")
        if not sep or not dot or not metric or not key:
            raise InputValidationError(
                [Problem(option, None, None, f"expected METRIC.KEY=VALUE (e.g. answer_correctness.beta=2), "
                         f"got {item!r}")]
            )
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw.strip()
        parsed.setdefault(metric, {})[key.strip()] = value
    return parsed


def build_evaluators(
    metric_names: Sequence[str],
    thresholds: Mapping[str, float],
    options: Mapping[str, Any],
    *,
    threshold_source: str = "--threshold",
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Evaluators by metric name, through the registry (unknown names raise with close matches).

    A threshold for a metric that is not chosen is an input error (``threshold_source`` names where
    the thresholds came from, for the message), and so is a metric option (``metric_options``:
    ``{metric: {key: value}}``) for a metric not chosen or a key its constructor does not take."""
    from touchstone.evaluators import registry

    names = list(metric_names)
    for name in thresholds:
        if name not in names:
            raise InputValidationError(
                [Problem(threshold_source, None, name, f"not one of the chosen metrics {names}")]
            )
    for name in names:
        registry.get(name)  # report an unknown name before building anything
    own = {name: dict(opts) for name, opts in (metric_options or {}).items()}
    for name, opts in own.items():
        if name not in names:
            raise InputValidationError(
                [Problem("--metric-option", None, name, f"not one of the chosen metrics {names}")]
            )
        try:
            registry.check_overrides(name, opts, "--metric-option")
        except ConfigurationError as exc:
            raise InputValidationError([Problem("--metric-option", None, name, str(exc))]) from None
    return {
        name: registry.create(name, threshold=thresholds.get(name), overrides=own.get(name), **options)
        for name in names
    }


def mapped_inputs(columns: Collection[str], evaluator_config: Mapping[str, Any]) -> set[str]:
    """The input names the data provides: its columns, and the inputs the default column mapping
    points at a present data column (or at the target's output, which exists once it has run)."""
    present = set(columns)
    mapping = ((evaluator_config.get("default") or {}).get("column_mapping") or {})
    for name, ref in mapping.items():
        ref = str(ref)
        if ref.startswith("${data.") and ref.endswith("}"):
            if ref[len("${data."):-1] in columns:
                present.add(name)
            else:
                present.discard(name)
        elif ref.startswith("${target."):
            present.add(name)
    return present


def data_columns(data: str | os.PathLike[str]) -> set[str]:
    """Every column of a data file (the keys of any of its rows)."""
    from touchstone.data.loaders import load_records

    columns: set[str] = set()
    for record in load_records(os.fspath(data)):
        columns.update(record.data)
    return columns


def preset_metrics(name: str, inputs: Collection[str] | None) -> list[str]:
    """The metric names of preset ``name`` for data providing ``inputs`` (None: unknown, every metric
    kept); see :func:`touchstone.engine.presets.resolve`, which also says what it dropped and why."""
    return resolve(name, inputs).metrics


def choose_metrics(
    metric_names: Sequence[str] | None,
    preset: str | None,
    inputs: Collection[str] | None = None,
    default: Sequence[str] = ("f1_score", "exact_match"),
) -> list[str]:
    """The metrics of a run: the preset's (for the data's ``inputs``) then the named ones not already
    in it; ``default`` when neither is given."""
    if preset is None:
        return list(metric_names) if metric_names else list(default)
    names = preset_metrics(preset, inputs)
    return names + [m for m in (metric_names or ()) if m not in names]


def stored_run_settings(store: str | os.PathLike[str] | None, run_id: str) -> StoredRunSettings:
    """Metric names, thresholds, evaluator configuration and judge configuration of the stored run
    ``run_id``, to resume it as it was started. Raises ConfigurationError when there is no such run."""
    from touchstone.store import open_store

    run_store = open_store(store)
    info = run_store.get_run(run_id)
    if info is None:
        raise ConfigurationError(f"no run {run_id!r} in the store {run_store.path}")
    names: list[str] = []
    thresholds: dict[str, float] = {}
    metric_options: dict[str, dict[str, Any]] = {}
    judge: Any = None
    for name, ev in (info.config.get("evaluators") or {}).items():
        metric = ev.get("metric") or name
        names.append(metric)
        opts = ev.get("options") or {}
        threshold = opts.get("threshold")
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            thresholds[metric] = threshold  # as stored: an int threshold stays one in the resumed rows
        if judge is None:
            judge = _judge_from_description(opts.get("judge"))
        restored = _restorable_options(metric, opts)
        if restored:
            metric_options[metric] = restored
    evaluator_config = dict(info.config.get("evaluator_config") or {})
    return StoredRunSettings(run_id, names, thresholds, evaluator_config, judge, metric_options)


def check_judge_key(model_config: Any, evaluators: Mapping[str, Any]) -> None:
    """Refuse, before a run is created, judge metrics whose judge is the hosted OpenAI API (no base
    URL anywhere) when no API key is configured: every call would fail. A judge at a base URL (a
    local server may need no key) and Azure (which may sign in without a key) are left to the call."""
    if not isinstance(model_config, Mapping) or not any(
        getattr(ev, "needs_judge", False) for ev in evaluators.values()
    ):
        return
    if model_config.get("type") not in (None, "openai") or "azure_endpoint" in model_config:
        return
    if model_config.get("base_url") or os.environ.get("OPENAI_BASE_URL"):
        return
    if model_config.get("api_key") or os.environ.get("OPENAI_API_KEY"):
        return
    judged = sorted(name for name, ev in evaluators.items() if getattr(ev, "needs_judge", False))
    raise ConfigurationError(
        f"judge model {model_config.get('model')!r} is the OpenAI API, and no API key is set: set "
        "OPENAI_API_KEY, or pass --judge-base-url URL for an OpenAI-compatible server "
        f"(metrics that need the judge: {', '.join(judged)}; --dry-run needs no key)"
    )


def check_resume_choices(
    stored: StoredRunSettings,
    metric_names: Sequence[str],
    thresholds: Mapping[str, float],
    evaluator_config: Mapping[str, Any],
    metric_options: Mapping[str, Mapping[str, Any]] | None,
) -> None:
    """Refuse a resume given metrics, thresholds, a mapping or metric options other than the stored
    run's: it continues the run as it was started, so a different choice would be silently ignored.
    Naming the same ones again is accepted. Raises ConfigurationError saying what differs."""
    differ: list[str] = []
    if metric_names and sorted(set(metric_names)) != sorted(set(stored.metric_names)):
        differ.append(f"metrics: the run has {', '.join(stored.metric_names) or 'none'}; "
                      f"given {', '.join(metric_names)}")
    changed = sorted(m for m, v in thresholds.items() if stored.thresholds.get(m) != v)
    if changed:
        differ.append("thresholds of " + ", ".join(
            f"{m} (the run has {stored.thresholds.get(m, 'none')}, given {thresholds[m]})" for m in changed))
    if evaluator_config and dict(evaluator_config) != stored.evaluator_config:
        differ.append("the column mapping (--map)")
    given_options = {m: dict(o) for m, o in (metric_options or {}).items() if o}
    changed_options = sorted(m for m, o in given_options.items()
                             if any(stored.metric_options.get(m, {}).get(k) != v for k, v in o.items()))
    if changed_options:
        differ.append("metric options of " + ", ".join(changed_options))
    if differ:
        raise ConfigurationError(
            f"--resume {stored.run_id} continues the run as it was started, but " + "; ".join(differ)
            + ". Drop those options to resume, or start a new run to use them."
        )


def _restorable_options(metric: str, stored: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor options a stored run recorded for ``metric`` that can be given again as they
    were (plain values: numbers, strings, booleans and lists of them), so that a resumed run scores
    its remaining rows as it scored the first ones (``--metric-option`` included)."""
    from touchstone.evaluators import registry

    if metric not in registry.available():
        return {}
    plain = (int, float, str, bool)
    valid = set(registry.option_names(metric)) - {"threshold", "credential"}
    def is_plain(v: Any) -> bool:
        return isinstance(v, plain) or (isinstance(v, list) and all(isinstance(x, plain) for x in v))

    return {k: v for k, v in stored.items() if k in valid and is_plain(v)}


def _judge_from_description(described: Any) -> Any:
    """A judge configuration from the description a run stores (model, endpoint; never a key)."""
    if not (isinstance(described, dict) and described.get("model")):
        return None
    # a model configuration dict (the SDK's shape) with the keys that were stored
    if described.get("azure_endpoint"):
        keys = {"azure_endpoint": "azure_endpoint", "model": "azure_deployment", "api_version": "api_version"}
    else:
        keys = {"model": "model", "base_url": "base_url"}
    return {name: described[key] for key, name in keys.items() if described.get(key)}


def configured_judge(model: str | None = None, base_url: str | None = None) -> Any:
    """The judge from a model name and base URL with the environment as fallback, or None when
    nothing names a judge (a judge metric then says how to configure one before anything runs)."""
    from touchstone.evaluators.judge import configured_judge as from_flags_and_env

    return from_flags_and_env(model, base_url)


def resolve_judge(choice: JudgeChoice, stored: Any = None) -> Any:
    """The judge of a run: Azure OpenAI when an Azure endpoint or deployment is named; else the judge
    of the resumed run (``stored``) unless a model or base URL is named anew; else the named one with
    the environment as fallback (None when nothing names a judge). A named provider names a judge."""
    if choice.provider is not None:
        from touchstone.judges.config import model_config_from_env

        return model_config_from_env(
            choice.model, base_url=choice.base_url, azure_endpoint=choice.azure_endpoint,
            azure_deployment=choice.azure_deployment, provider=choice.provider,
        )
    if choice.names_azure:
        from touchstone.judges.config import model_config_from_env

        return model_config_from_env(
            choice.model, azure_endpoint=choice.azure_endpoint, azure_deployment=choice.azure_deployment
        )
    if stored is not None and not choice.names_openai:
        if any("***@" in str(stored.get(k) or "") for k in ("base_url", "azure_endpoint")):
            raise ConfigurationError(
                "the resumed run's judge URL had credentials (user:password@), which are never stored; "
                "give the URL again with --judge-base-url"
            )
        return stored
    return configured_judge(choice.model, choice.base_url)


def plan_evaluation(
    metric_names: Sequence[str],
    thresholds: Mapping[str, float],
    evaluator_config: Mapping[str, Any],
    *,
    judge: JudgeChoice | None = None,
    score_mode: str | None = None,
    metric_file: str | os.PathLike[str] | None = None,
    judge_session: Mapping[str, Any] | None = None,
    store: str | os.PathLike[str] | None = None,
    resume: str | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    dry_run: bool = False,
) -> EvaluationPlan:
    """The evaluators and options of a run.

    With ``resume``, the stored run's own metrics, thresholds and mapping replace the given ones (the
    run continues as it was started) and its judge is kept unless another is named. Every metric of
    ``metric_file`` is added. A ``dry_run`` calls nothing, so it needs no key and, with no judge
    named, prices the default one. Raises InputValidationError / ConfigurationError before anything
    runs (a judge metric whose judge is the OpenAI API with no key in sight included)."""
    choice = judge or JudgeChoice()
    names, limits, config = list(metric_names), dict(thresholds), dict(evaluator_config)
    stored_judge: Any = None
    if resume:
        stored = stored_run_settings(store, resume)
        check_resume_choices(stored, metric_names, thresholds, evaluator_config, metric_options)
        names, limits, config, stored_judge = (
            stored.metric_names,
            stored.thresholds,
            stored.evaluator_config,
            stored.judge,
        )
        metric_options = stored.metric_options
    model_config = resolve_judge(choice, stored_judge)
    if model_config is None and dry_run:
        from touchstone.judges.config import model_config_from_env

        model_config = model_config_from_env()
    file_metrics: dict[str, Any] = {}
    if metric_file is not None:
        from touchstone.evaluators.custom import split_file_metrics

        names, limits, file_metrics = split_file_metrics(
            Path(metric_file), names, limits, model_config=model_config, score_mode=score_mode
        )
    options = {"model_config": model_config, "score_mode": score_mode}
    evaluators = {**build_evaluators(names, limits, options, metric_options=metric_options), **file_metrics}
    if not dry_run:
        check_judge_key(model_config, evaluators)
    return EvaluationPlan(evaluators, config, dict(judge_session or {}), model_config, resume)


@dataclass(frozen=True)
class MetricInfo:
    """One line of the metric catalogue: the inputs a metric takes (``a, b | c, d`` when it accepts
    several input modes; ``[x]`` marks an optional input), its range, whether it needs a judge."""

    name: str
    inputs: str
    value_range: str
    needs_judge: bool
    description: str


def describe_inputs(cls: Any) -> str:
    """The inputs of an evaluator class as one line: its input modes, else its inputs with the
    optional ones in brackets."""
    modes = tuple(getattr(cls, "input_modes", None) or ())
    if modes:
        return " | ".join(", ".join(mode) for mode in modes)
    return ", ".join(spec.name if spec.required else f"[{spec.name}]" for spec in cls.inputs)


def metric_catalogue() -> list[MetricInfo]:
    """Every registered metric, in the registry's order."""
    from touchstone.evaluators import registry

    return [
        MetricInfo(name, describe_inputs(cls), cls.value_range, bool(cls.needs_judge), cls.description)
        for name, cls in registry.available().items()
    ]
