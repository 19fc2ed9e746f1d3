"""The summary table keeps every metric name whole at 80 columns: the interval narrows first, then
a long name breaks only after its ``evaluator.`` part."""

from __future__ import annotations

import io

from rich.console import Console

from touchstone.cli.common import summary_table


def _render(summary: dict[str, dict[str, object]], width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(summary_table(summary, width=width))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line) for line in text.splitlines()) <= width
    return str(text)


ENTRY = {"mean": 0.123456, "ci95": [0.111111, 0.222222], "n": 1000, "n_failed": 3, "pass_rate": 0.5}


def test_names_that_fit_stay_on_one_line() -> None:
    text = _render({"bleu_score.corpus_bleu": {"corpus": True, "value": 0.1, "n": 24, "n_failed": 0},
                    "rouge.rouge_precision": ENTRY, "f1_score.f1_score": ENTRY}, 80)
    assert "bleu_score.corpus_bleu" in text and "rouge.rouge_precision" in text and "(corpus)" in text
    assert "│ f1_score " in text  # "f1_score.f1_score" reads as "f1_score"


def test_long_names_break_after_the_evaluator_part_only() -> None:
    names = ["faithfulness.faithfulness_precision", "answer_correctness.answer_correctness_f1"]
    text = _render(dict.fromkeys(names, ENTRY), 80)
    cells = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    for name in names:
        evaluator, score = name.split(".")
        assert f"{evaluator}." in cells and score in cells  # each part whole
    assert "…" not in text
