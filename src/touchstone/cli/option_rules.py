"""One validation layer for the numeric options of every command: each option named here is checked
for type, range and finiteness as the command line is parsed, before the command's own code runs,
so a bad value is exit status 2 with one line naming the option (never a traceback, an allocation of
gigabytes, a hang, or judge calls spent first).

The rules are by option name, so ``--seed`` means the same in ``rank``, ``compare`` and ``eval``.
Every ``float`` option is also refused when it is not finite (``nan``, ``inf``), whatever its name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    """The values an option accepts: at least ``low`` (above it when ``open_low``), at most ``high``
    (below it when ``open_high``)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    what: str = ""
    """Why the bound is there, said with the refusal (e.g. "to bound memory")."""

    def problem(self, value: float) -> str | None:
        """What is wrong with ``value`` (``must be ..., got ...``), or None when it is accepted."""
        finite = not (isinstance(value, float) and not math.isfinite(value))
        low_ok = self.low is None or (value > self.low if self.open_low else value >= self.low)
        high_ok = self.high is None or (value < self.high if self.open_high else value <= self.high)
        if finite and low_ok and high_ok:
            return None
        return f"must be {self.describe()}, got {_num(value)}" + (f" ({self.what})" if self.what else "")

    def describe(self) -> str:
        if self.low is not None and self.high is not None and not (self.open_low or self.open_high):
            return f"between {_num(self.low)} and {_num(self.high)}"
        parts = []
        if self.low is not None:
            parts.append(f"{'above' if self.open_low else 'at least'} {_num(self.low)}")
        if self.high is not None:
            parts.append(f"{'below' if self.open_high else 'at most'} {_num(self.high)}")
        return " and ".join(parts) if parts else "a finite number"


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_SEED = Rule(0, 2**32 - 1)
RULES: dict[str, Rule] = {
    "--seed": _SEED,
    "--alpha": Rule(0, 1, open_low=True, open_high=True),
    "--confidence": Rule(0, 1, open_low=True, open_high=True),
    "--sample-rate": Rule(0, 1, open_low=True),
    "--n-boot": Rule(1, 100_000, what="bootstrap resamples are kept in memory"),
    "--bootstrap": Rule(0, 100_000, what="bootstrap resamples are kept in memory"),
    "--k": Rule(1, 10_000, what="a cut-off beyond any ranked list scored here"),
    "--poll": Rule(0, 86_400, open_low=True),
    "--port": Rule(0, 65_535),
    "--concurrency": Rule(1, 10_000),
    "--parallel": Rule(1, 10_000),
    "--workers": Rule(1, 1_024),
    "--timeout": Rule(0, 86_400, open_low=True),
    "--target-timeout": Rule(0, 86_400, open_low=True),
    "--max-retries": Rule(0, 100),
    "--limit": Rule(0, 1_000_000),
    "--sample": Rule(1, 100_000_000),
    "--clusters": Rule(1, 10_000),
    "--budget": Rule(0, open_low=True),
    "--baseline": Rule(0, 100_000),
    "--grace": Rule(0, 86_400 * 366),
    "--max-simulation-results": Rule(1, 100_000),
    "--max-conversation-turns": Rule(1, 1_000),
    "--objectives": Rule(1, 100_000),
    "--evidence-rows": Rule(0, 100_000),
    "--rows-of": Rule(0, 100_000_000),
}
_FINITE = Rule()


def _numeric(param: Any) -> bool:
    bare = getattr(param, "bare_type", None)
    name = ""
    if callable(bare):
        try:
            name = str(bare())
        except Exception:  # an annotation typer cannot name: not a number
            return False
    else:
        name = str(getattr(getattr(param, "type", None), "name", ""))
    return name in ("int", "float", "integer")


def _checking(option: str, rule: Rule, original: Callable[..., Any] | None) -> Callable[..., Any]:
    def check(ctx: Any, param: Any, value: Any) -> Any:
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                why = rule.problem(item)
                if why is not None:  # said as every input error is: one line, exit status 2
                    from touchstone.cli.common import fail_input

                    raise fail_input(f"{option} {why}")
        return original(ctx, param, value) if original is not None else value

    return check


def apply_rules(params: list[Any]) -> list[Any]:
    """Give each numeric option of ``params`` its rule (by name; finiteness for every float)."""
    for param in params:
        if getattr(param, "param_type_name", None) != "option" or getattr(param, "_touchstone_rule", False):
            continue
        if not _numeric(param) or getattr(param, "is_flag", False) or getattr(param, "count", False):
            continue
        long_names = [o for o in param.opts if o.startswith("--")]
        option = next((o for o in long_names if o in RULES), long_names[0] if long_names else param.opts[0])
        param.callback = _checking(option, RULES.get(option, _FINITE), getattr(param, "callback", None))
        param._touchstone_rule = True
    return params
