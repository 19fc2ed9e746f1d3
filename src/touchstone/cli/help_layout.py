"""How every command's ``--help`` reads at 80 columns: options grouped into panels by what they are
for, readable value placeholders, and descriptions reflowed into paragraphs.

The layout is applied to each command when it is loaded (:func:`tidy_command`), so the commands'
own modules declare only their options and one docstring."""

from __future__ import annotations

import re
from typing import Any

from touchstone.cli.option_rules import apply_rules

_INPUT = "Input"
_METRICS = "Metrics"
_JUDGE = "Judge model"
_RUN = "Run"
_OUTPUT = "Output and gates"
_SPENDING = "Spending and sampling"
_TARGET = "Application under test"

PANELS: dict[str, str] = {
    **dict.fromkeys(("--map", "--rows-of", "--target", "--target-body", "--target-response-path"), _INPUT),
    **dict.fromkeys(
        ("--metrics", "--preset", "--metric-option", "--threshold", "--metric-file", "--defect-level",
         "--max-tier", "--score-mode"),
        _METRICS,
    ),
    **dict.fromkeys(
        ("--judge-model", "--judge-base-url", "--judge-provider", "--azure-endpoint", "--azure-deployment",
         "--concurrency", "--no-cache", "--timeout", "--max-retries", "--http-transport", "--no-hedge"),
        _JUDGE,
    ),
    **dict.fromkeys(
        ("--name", "--store", "--workers", "--executor", "--ray-address", "--resume", "--retry-failed",
         "--quiet"),
        _RUN,
    ),
    **dict.fromkeys(("--out", "--min", "--fail-on-error", "--json", "--junit", "--show-estimate"), _OUTPUT),
    **dict.fromkeys(
        ("--dry-run", "--pricing", "--sample", "--budget", "--strategy", "--stratify-by", "--allocation",
         "--clusters", "--seed"),
        _SPENDING,
    ),
}
"""The help panel of an option, by its long name (the same option reads the same in every command)."""

_PANEL_ORDER = (_INPUT, _METRICS, _JUDGE, _RUN, _OUTPUT, _SPENDING, _TARGET)

_METAVARS = {
    "int": "N", "integer": "N", "float": "NUMBER", "str": "TEXT", "text": "TEXT", "Path": "PATH",
    "path": "PATH", "list[str]": "TEXT", "list[int]": "N", "list[float]": "NUMBER", "list[Path]": "PATH",
}
"""The word shown for a value's placeholder, by its type's name (typer's or click's)."""


def _type_name(param: Any) -> str:
    bare = getattr(param, "bare_type", None)  # typer >= 0.20 keeps the annotation
    if callable(bare):
        try:
            return str(bare())
        except Exception:  # an annotation typer cannot name: no placeholder word
            return ""
    return str(getattr(getattr(param, "type", None), "name", ""))


def _is_choice(param: Any) -> bool:
    return bool(getattr(getattr(param, "type_descriptor", None), "is_choice", False))


def tidy_params(params: list[Any]) -> list[Any]:
    """Readable help for these parameters: a flag shows no value placeholder, a value a plain word
    (``N``, ``TEXT``, ``PATH``) instead of typer's ``<bool>``/``<list[str]>`` labels (choices stay
    listed), an argument its own name, and each known option its panel.

    (Duck-typed: recent typer releases carry their own copy of click's classes.)"""
    for param in params:
        kind = getattr(param, "param_type_name", None)
        if kind == "argument":
            if param.metavar is None:
                param.metavar = str(param.name).upper()
            continue
        if kind != "option":
            continue
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""
        elif param.metavar is None and not _is_choice(param):
            word = _METAVARS.get(_type_name(param))
            if word is not None:
                param.metavar = word
        long_names = [o for o in param.opts if o.startswith("--")]
        panel = next((PANELS[o] for o in long_names if o in PANELS), None)
        if panel is not None and getattr(param, "rich_help_panel", None) is None:
            param.rich_help_panel = panel
    order = {name: i for i, name in enumerate(_PANEL_ORDER)}
    # panels print in the order their first option appears: input first, spending last
    return sorted(params, key=lambda p: order.get(getattr(p, "rich_help_panel", None) or "", len(order)))


def reflow(text: str | None) -> str | None:
    """A docstring's paragraphs with their single line breaks joined, so the terminal wraps them
    (a line break inside a sentence otherwise shows as one)."""
    if not text:
        return text
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def tidy_command(command: Any) -> Any:
    """``command`` (and a group's sub-commands) with the option rules
    (:func:`~touchstone.cli.option_rules.apply_rules`) and :func:`tidy_params` applied to its
    parameters whenever they are read, and its help reflowed."""
    original = command.get_params

    def get_params(ctx: Any) -> list[Any]:
        return tidy_params(apply_rules(original(ctx)))

    command.get_params = get_params
    command.help = reflow(command.help)
    for sub in getattr(command, "commands", {}).values():  # a group's sub-commands
        tidy_command(sub)
    return command
