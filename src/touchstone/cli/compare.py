"""``touchstone compare A B``: a paired comparison of two stored runs on the same rows, as a table or
a JSON document; exit status 1 when any metric of B is significantly worse than A (a CI gate)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import typer
from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from touchstone._text import json_dumps, one_line, safe_text
from touchstone.cli.common import (
    EXIT_GATE,
    STORE_HELP,
    fail_input,
    fail_store,
    fmt,
    open_run_store,
    out,
    parse_names,
)
from touchstone.errors import InputValidationError
from touchstone.store.base import StoreConnectionError

_VERDICT_STYLE = {
    "better": "bold green", "worse": "bold red", "no detectable difference": "", "not compared": "dim"
}
_SHOWN_KEYS = 10


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def comparison_table(doc: dict[str, Any]) -> Table:
    """One metric a line: pairs, both means, the difference with its interval, p-values, pass rates,
    McNemar's p-value and the verdicts."""
    a, b = doc["run_a"], doc["run_b"]
    level = f"{doc['ci_level']:.0%}"
    title = f"compare A = {one_line(a['id'])} with B = {one_line(b['id'])} (difference B - A)"
    table = Table(title=Text(title), title_justify="left")
    for name, justify in (("metric", "left"), ("n", "right"), ("mean A", "right"), ("mean B", "right"),
                          ("B - A", "right"), (f"{level} CI", "right"), ("p", "right"), ("p (Holm)", "right"),
                          ("pass A -> B", "right"), ("McNemar p (Holm)", "right"), ("verdict", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for m in doc["metrics"]:
        ci = m["ci"]
        mc = m["mcnemar"]
        passes = "-"
        if m["pass_rate_a"] is not None:
            passes = f"{_rate(m['pass_rate_a'])} -> {_rate(m['pass_rate_b'])}"
        verdict = Text(m["verdict"], style=_VERDICT_STYLE[m["verdict"]])
        if m["pass_verdict"] not in ("not compared", "no detectable difference"):
            verdict.append(f"; pass rate {m['pass_verdict']}", style=_VERDICT_STYLE[m["pass_verdict"]])
        direction = "↑" if m["higher_is_better"] else "↓"
        table.add_row(
            safe_text(f"{m['metric']} {direction}", keep_newlines=False),
            str(m["n_pairs"]),
            fmt(m["mean_a"]),
            fmt(m["mean_b"]),
            "-" if m["difference"] is None else f"{m['difference']:+.4f}",
            "-" if ci is None else f"[{fmt(ci[0])}, {fmt(ci[1])}]",
            _p(m["p_value"]),
            _p(m["p_holm"]),
            passes,
            "-" if mc is None else _p(mc["p_holm"]),
            verdict,
        )
    return table


WIDE = 140
"""From this many columns up the comparison is one table; below it, a short block per metric."""


def comparison_blocks(doc: dict[str, Any]) -> Group:
    """The comparison for a narrow terminal: per metric its name and verdict on one line, then the
    means, the difference with its interval, the p-values and the pass rates, wrapped as text."""
    a, b = doc["run_a"], doc["run_b"]
    level = f"{doc['ci_level']:.0%}"
    parts: list[Text | Padding] = [
        Text(f"compare A = {one_line(a['id'])} with B = {one_line(b['id'])} (difference B - A)", style="bold")
    ]
    for m in doc["metrics"]:
        head = Text(f"{one_line(m['metric'])} {'↑' if m['higher_is_better'] else '↓'}  ", style="bold")
        head.append(m["verdict"], style=_VERDICT_STYLE[m["verdict"]])
        if m["pass_verdict"] not in ("not compared", "no detectable difference"):
            head.append(f"; pass rate {m['pass_verdict']}", style=_VERDICT_STYLE[m["pass_verdict"]])
        ci = m["ci"]
        lines = [f"{m['n_pairs']} pairs · A {fmt(m['mean_a'])} · B {fmt(m['mean_b'])}"]
        if m["difference"] is not None:
            interval = "" if ci is None else f" ({level} CI {fmt(ci[0])} to {fmt(ci[1])})"
            lines.append(f"B - A {m['difference']:+.4f}{interval}")
        lines.append(f"p {_p(m['p_value'])} · Holm {_p(m['p_holm'])}")
        if m["pass_rate_a"] is not None:
            mc = m["mcnemar"]
            mcnemar = "" if mc is None else f" · McNemar Holm {_p(mc['p_holm'])}"
            lines.append(f"pass rate {_rate(m['pass_rate_a'])} -> {_rate(m['pass_rate_b'])}{mcnemar}")
        parts += [head, Padding(Text("\n".join(lines)), (0, 0, 0, 2))]
    return Group(*parts)


def _keys(keys: Sequence[Hashable], total: int) -> str:
    shown = ", ".join(one_line(k) for k in keys[:_SHOWN_KEYS])
    return shown + (f" ... ({total} in all)" if total > _SHOWN_KEYS else "")


def print_notes(doc: dict[str, Any]) -> None:
    """How rows were matched, what was left unmatched, failed scores, and which test gave p."""
    rows = doc["rows"]
    out.print(Text(
        f"rows matched by {doc['match_by']}: {rows['matched']} pairs "
        f"(A has {rows['a']} rows, B {rows['b']}); "
        "p: paired permutation test of the mean difference; Holm's correction over "
        f"{doc['holm_family']}; "
        f"↑/↓: higher/lower is better"
    ))
    for side in ("a", "b"):
        count = rows[f"unmatched_{side}"]
        if count:
            out.print(Text(f"{count} rows only in {side.upper()}: {_keys(doc[f'unmatched_{side}'], count)}",
                           style="yellow"))
    for m in doc["metrics"]:
        failed = m["n_failed_a"], m["n_failed_b"]
        if any(failed) or m["n_missing"]:
            out.print(Text(
                f"{one_line(m['metric'])}: failed scores left out of the pairs: "
                f"{failed[0]} in A, {failed[1]} in B"
                + (f"; {m['n_missing']} matched rows without a value" if m["n_missing"] else ""),
                style="yellow",
            ))


def compare_command(
    run_a: str = typer.Argument(..., help="The reference run id (from `touchstone runs`)."),
    run_b: str = typer.Argument(..., help="The candidate run id, compared with A (differences: B - A)."),
    alpha: float = typer.Option(
        0.05, "--alpha",
        help="Significance level, after Holm's correction across the metrics' tests; "
        "the interval's level is 1 - alpha.",
    ),
    metrics: str | None = typer.Option(
        None, "--metrics", "-m",
        help="Comma-separated metrics to compare: evaluator.score, an evaluator's name (all its scores) "
        "or a score's name. Default: every metric both runs have.",
    ),
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as a JSON document."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap and of Monte Carlo permutations."),
    n_boot: int = typer.Option(
        2000, "--n-boot", help="Bootstrap resamples for the interval of the mean difference."
    ),
    match_by: str = typer.Option(
        "auto", "--match-by",
        help="How rows are paired: 'id' (the rows' id field), 'index' (position), or 'auto' (id when every "
        "row of both runs has one, position when none has).",
    ),
) -> None:
    """Compare two stored runs on the same rows: per metric the mean difference with its paired
    bootstrap interval, a paired permutation p-value (and Wilcoxon's in --json), McNemar's test on
    pass/fail, Holm's correction and a verdict. Exit status 1 when B is significantly worse than A
    on any metric, 2 on bad input (an unknown run, a metric neither run has)."""
    from touchstone.compare import compare_runs

    try:
        wanted = None if metrics is None else parse_names(metrics, "--metrics")
        if match_by not in ("auto", "id", "index"):
            raise InputValidationError(f"--match-by must be auto, id or index, not {match_by!r}")
        run_store = open_run_store(store)
        result = compare_runs(run_store, run_a, run_b, alpha=alpha, metrics=wanted, n_boot=n_boot, seed=seed,
                              match_by=match_by)  # type: ignore[arg-type]
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    except StoreConnectionError as exc:
        raise fail_store(exc) from None
    doc = result.as_dict()
    if as_json:
        out.print_json(json_dumps(doc, default=str))
    else:
        out.print(comparison_table(doc) if out.width >= WIDE else comparison_blocks(doc))
        print_notes(doc)
        if result.regressions:
            names = ", ".join(m.metric for m in result.regressions)
            out.print(Text(f"B regressed significantly on: {one_line(names)}", style="bold red"))
    if result.regressions:
        raise typer.Exit(EXIT_GATE)

