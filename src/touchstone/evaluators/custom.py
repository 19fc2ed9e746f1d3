"""Custom metrics: a rubric the judge applies (defined in Python or in a YAML file), and a plain
Python function.

A rubric metric has a name, criteria, an integer scale, the inputs it needs and optional worked
examples; the judge applies it exactly like the built-in metrics (reasoning then score, structured
output, one repair, ``score_mode="logprobs"`` available), and the prompt's version and hash (template
plus the rubric's own definition) are stored with every score.

A metrics file (``touchstone eval ... --metric-file metrics.yaml``)::

    metrics:
      - name: politeness
        criteria: The response is courteous and respectful to the user.
        scale: [1, 5]                 # default 1-5
        inputs: [query, response]     # default [query, response]
        threshold: 3                  # default: the scale's middle
        scale_guide: {1: rude, 5: warm and respectful}
        examples:
          - inputs: {query: "Where is my order?", response: "Figure it out yourself."}
            score: 1
            reason: Dismissive and rude.
      - name: cites_a_document
        function: my_checks.py:cites_a_document   # or a module path: my_pkg.checks:fn
        threshold: 1
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from touchstone.data.kinds import InputKind
from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import Evaluator, EvaluatorLike, FunctionEvaluator, InputSpec
from touchstone.evaluators.judge import JudgeEvaluator, no_judge_error
from touchstone.evaluators.judge.prompt_inputs import context_block
from touchstone.evaluators.judge.prompts import PromptTemplate, delimit, format_answers, load_prompt
from touchstone.evaluators.judge.reply import Scale
from touchstone.scores import Outcome

_KNOWN_KINDS: dict[str, InputKind] = {
    "context": "context",
    "ground_truth": "texts",
    "conversation": "conversation",
}


def _render_value(name: str, value: Any) -> str:
    if name == "context":
        return context_block(value)
    if name == "ground_truth" and not isinstance(value, str):
        return format_answers([str(v) for v in value])
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


class RubricEvaluator(JudgeEvaluator):
    """A metric defined by criteria and a scale, applied by the judge.

    ``RubricEvaluator("politeness", "The response is courteous...", model_config=cfg,
    inputs=["query", "response"], scale=(1, 5), examples=[...])``. Outputs follow SPEC 3 under the
    metric's name (``politeness``, ``gpt_politeness``, ``politeness_reason``, ``politeness_result``...).
    """

    def __init__(
        self,
        name: str,
        criteria: str,
        *,
        model_config: Any,
        inputs: Sequence[str] = ("query", "response"),
        scale: tuple[int, int] | Sequence[int] = (1, 5),
        threshold: float | None = None,
        examples: Sequence[Mapping[str, Any]] = (),
        scale_guide: Mapping[Any, str] | None = None,
        score_mode: str = "sampled",
        version: str = "1",
        description: str = "",
    ) -> None:
        if not name or not name.replace("_", "").isalnum():
            raise ConfigurationError(f"custom metric name {name!r}: use letters, digits and underscores")
        if not isinstance(criteria, str) or not criteria.strip():
            raise ConfigurationError(f"custom metric {name}: 'criteria' must be a non-empty text")
        if len(scale) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in scale):
            raise ConfigurationError(f"custom metric {name}: 'scale' must be two integers [low, high]")
        try:
            rubric_scale = Scale(int(scale[0]), int(scale[1]))
        except ValueError as exc:
            raise ConfigurationError(f"custom metric {name}: {exc}") from None
        names = list(inputs)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ConfigurationError(
                f"custom metric {name}: 'inputs' must be a non-empty list of input names"
            )
        # instance-level values of the class-level declarations (as FunctionEvaluator does)
        self.metric = self.prefix = self.score_key = name  # type: ignore[misc]
        self.scale = rubric_scale  # type: ignore[misc]
        self.value_range = str(rubric_scale)  # type: ignore[misc]
        self.description = description or criteria.strip().splitlines()[0][:80]  # type: ignore[misc]
        self.inputs = tuple(InputSpec(n, _KNOWN_KINDS.get(n, "any")) for n in names)  # type: ignore[misc]
        self.input_modes = ()  # type: ignore[misc]
        self.default_threshold = (rubric_scale.low + rubric_scale.high) / 2  # type: ignore[misc]
        super().__init__(model_config, threshold=threshold, score_mode=score_mode)
        self.criteria = criteria.strip()
        self.examples = [self._check_example(e, i) for i, e in enumerate(examples)]
        self.scale_guide = {int(k): str(v) for k, v in (scale_guide or {}).items()}
        for k in self.scale_guide:
            if k not in rubric_scale.values:
                raise ConfigurationError(
                    f"custom metric {name}: scale_guide entry {k} is outside the scale {rubric_scale}"
                )
        self.version = str(version)
        self.definition = {
            "name": name,
            "criteria": self.criteria,
            "scale": [rubric_scale.low, rubric_scale.high],
            "inputs": names,
            "examples": self.examples,
            "scale_guide": self.scale_guide,
            "version": self.version,
        }
        template = load_prompt("rubric")
        self.prompt: PromptTemplate = template.with_identity(
            json.dumps(self.definition, sort_keys=True, ensure_ascii=False),
            version=f"{template.version}+{name}.{self.version}",
        )

    def _check_example(self, example: Mapping[str, Any], i: int) -> dict[str, Any]:
        if not isinstance(example, Mapping) or not isinstance(example.get("inputs"), Mapping):
            raise ConfigurationError(
                f"custom metric {self.metric}: example {i + 1} needs 'inputs' (a mapping) and 'score'"
            )
        score = example.get("score")
        if isinstance(score, bool) or not isinstance(score, int) or score not in self.scale.values:
            raise ConfigurationError(
                f"custom metric {self.metric}: example {i + 1} score must be an integer on {self.scale}"
            )
        return {"inputs": dict(example["inputs"]), "score": score, "reason": str(example.get("reason") or "")}

    @classmethod
    def from_options(cls, **_: Any) -> JudgeEvaluator:  # pragma: no cover - not registered by name
        raise ConfigurationError("rubric metrics are built from their definition, not by name")

    def options(self) -> dict[str, Any]:
        return {**super().options(), "rubric": self.definition}

    def prompts(self) -> list[PromptTemplate]:
        return [self.prompt]

    def _params(self, blocks: str) -> dict[str, Any]:
        guide = ""
        if self.scale_guide:
            guide = "What the points of the scale mean:\n" + "\n".join(
                f"{k} - {v}" for k, v in sorted(self.scale_guide.items())
            )
        examples = ""
        if self.examples:
            parts = []
            for k, ex in enumerate(self.examples):
                shown = "\n".join(delimit(n, _render_value(n, v)) for n, v in ex["inputs"].items())
                parts.append(f"Example {k + 1}:\n{shown}\nExpected rating: "
                             + json.dumps({"reason": ex["reason"], "score": ex["score"]}, ensure_ascii=False))
            examples = "Worked examples (their material is data too):\n\n" + "\n\n".join(parts)
        return {
            "metric_name": self.metric, "criteria": self.criteria, "scale_min": self.scale.low,
            "scale_max": self.scale.high, "scale_guide": guide, "examples": examples, "material": blocks,
        }

    async def _ascore(self, **inputs: Any) -> Outcome:
        blocks = "\n".join(delimit(spec.name, _render_value(spec.name, inputs[spec.name]))
                           for spec in self.inputs if inputs.get(spec.name) is not None)
        j = await self._judge(self.prompt, {}, params=self._params(blocks))
        return self.judged(j)


class FunctionMetric(FunctionEvaluator):
    """A plain Python function as a metric. A number it returns becomes the SPEC 3 key set under the
    metric's name (with pass/fail when ``threshold`` is set); a dict is used as the outputs."""

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, *, threshold: float | None = None,
        higher_is_better: bool = True,
    ) -> None:
        super().__init__(fn, name=name)
        self.score_key = self.name  # type: ignore[misc]
        self.threshold = None if threshold is None else float(threshold)
        self.higher_is_better = higher_is_better  # type: ignore[misc]

    def options(self) -> dict[str, Any]:
        return {**super().options(), "threshold": self.threshold}

    def _wrap(self, value: Any) -> Outcome:
        if isinstance(value, Mapping):
            return self.as_outcome(dict(value))
        if isinstance(value, bool):
            value = float(value)
        if not isinstance(value, (int, float)):
            raise TypeError(
                f"metric {self.name} returned {type(value).__name__}; expected a number or a dict"
            )
        return self.result(value)


class CallableEvaluator(FunctionEvaluator):
    """A plain callable (a function or an object with ``__call__``) given to ``evaluate()``, its
    return value read as the compatible SDK reads it: a mapping is the outputs, a dataclass its
    fields, anything else (a number, a text, a list...) the single output ``output``."""

    OUTPUT_KEY = "output"

    def _wrap(self, value: Any) -> Outcome:
        if isinstance(value, Mapping):
            return self.as_outcome(dict(value))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.as_outcome(dataclasses.asdict(value))
        return self.as_outcome({self.OUTPUT_KEY: value})


def as_sdk_evaluator(obj: EvaluatorLike, name: str) -> Evaluator:
    """An :class:`Evaluator` as it is; any other callable as a :class:`CallableEvaluator` (what
    ``evaluate()`` does with the evaluators it is given)."""
    if isinstance(obj, Evaluator):
        return obj
    if callable(obj):
        return CallableEvaluator(obj, name=name)
    raise TypeError(f"evaluator {name!r} is neither an Evaluator nor callable: {type(obj).__name__}")


def function_metric(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, threshold: float | None = None
) -> Any:
    """Make a function a metric; usable as ``function_metric(fn)`` or as a decorator
    ``@function_metric(threshold=1)``."""
    if fn is None:
        return lambda f: FunctionMetric(f, name=name, threshold=threshold)
    return FunctionMetric(fn, name=name, threshold=threshold)


# ------------------------------------------------------------------------------ metrics files
def _load_function(ref: str, base: Path) -> Callable[..., Any]:
    if ":" not in ref:
        raise ConfigurationError(f"function {ref!r}: expected 'module:function' or 'file.py:function'")
    where, attr = ref.rsplit(":", 1)
    if where.endswith(".py"):
        path = (base / where).resolve() if not Path(where).is_absolute() else Path(where)
        if not path.is_file():
            raise ConfigurationError(f"function {ref!r}: no file {path}")
        mod_name = f"touchstone_custom_{path.stem}_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ConfigurationError(f"function {ref!r}: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module  # so a process pool can pickle what it defines
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise ConfigurationError(f"function {ref!r}: cannot import {where}: {exc}") from None
    fn: object = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigurationError(f"function {ref!r}: {attr} is not a callable in {where}")
    return fn


def load_metric_definitions(path: str | Path) -> list[dict[str, Any]]:
    """The metric definitions of a YAML (or JSON) metrics file, checked for shape."""
    p = Path(path)
    try:
        if p.exists() and not p.is_file():  # a FIFO or device would block the read forever
            raise ConfigurationError(f"metrics file {p}: expected a regular file")
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read metrics file {p}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"metrics file {p}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"metrics file {p}: not valid YAML: {exc}") from None
    items = doc.get("metrics") if isinstance(doc, Mapping) else doc
    if not isinstance(items, list) or not items:
        raise ConfigurationError(f"metrics file {p}: expected a 'metrics' list of metric definitions")
    seen = set()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ConfigurationError(f"metrics file {p}: metric {i + 1} needs a 'name'")
        if ("criteria" in item) == ("function" in item):
            raise ConfigurationError(
                f"metrics file {p}: metric {item['name']} needs either 'criteria' (a rubric) or 'function'"
            )
        if item["name"] in seen:
            raise ConfigurationError(f"metrics file {p}: metric {item['name']} is defined twice")
        seen.add(item["name"])
    return [dict(item) for item in items]


_RUBRIC_FIELDS = {
    "name",
    "criteria",
    "scale",
    "inputs",
    "threshold",
    "examples",
    "scale_guide",
    "score_mode",
    "version",
    "description",
}
_FUNCTION_FIELDS = {"name", "function", "threshold", "higher_is_better"}


def metrics_from_file(
    path: str | Path,
    *,
    model_config: Any = None,
    thresholds: Mapping[str, float] | None = None,
    score_mode: str | None = None,
) -> dict[str, Evaluator]:
    """Build the metrics a file defines, by name. Rubric metrics need ``model_config`` (a clear
    :class:`ConfigurationError` otherwise); ``thresholds`` override the file's."""
    p = Path(path)
    out: dict[str, Evaluator] = {}
    for item in load_metric_definitions(p):
        name = item["name"]
        threshold = (thresholds or {}).get(name, item.get("threshold"))
        if "function" in item:
            unknown = set(item) - _FUNCTION_FIELDS
            if unknown:
                raise ConfigurationError(
                    f"metrics file {p}: metric {name}: unknown field(s) {sorted(unknown)}"
                )
            fn = _load_function(str(item["function"]), p.parent)
            out[name] = FunctionMetric(
                fn, name=name, threshold=threshold, higher_is_better=bool(item.get("higher_is_better", True))
            )
            continue
        unknown = set(item) - _RUBRIC_FIELDS
        if unknown:
            raise ConfigurationError(f"metrics file {p}: metric {name}: unknown field(s) {sorted(unknown)}")
        if model_config is None:
            raise no_judge_error(name)
        scale = item.get("scale", [1, 5])
        if isinstance(scale, Mapping):
            scale = [scale.get("min"), scale.get("max")]
        out[name] = RubricEvaluator(
            name,
            item["criteria"],
            model_config=model_config,
            inputs=item.get("inputs") or ("query", "response"),
            scale=scale,
            threshold=threshold,
            examples=item.get("examples") or (),
            scale_guide=item.get("scale_guide"),
            score_mode=score_mode or item.get("score_mode") or "sampled",
            version=str(item.get("version", "1")),
            description=str(item.get("description") or ""),
        )
    return out


def split_file_metrics(
    path: str | Path,
    metric_names: Sequence[str],
    thresholds: Mapping[str, float],
    *,
    model_config: Any = None,
    score_mode: str | None = None,
) -> tuple[list[str], dict[str, float], dict[str, Evaluator]]:
    """For the command line's ``--metric-file``: the metrics the file defines (all of them, built),
    and the chosen names and thresholds left for the registry (those the file does not define)."""
    names = [d["name"] for d in load_metric_definitions(path)]
    file_thresholds = {k: v for k, v in thresholds.items() if k in names}
    built = metrics_from_file(
        path, model_config=model_config, thresholds=file_thresholds, score_mode=score_mode
    )
    rest = [m for m in metric_names if m not in built]
    return rest, {k: v for k, v in thresholds.items() if k not in built}, built
