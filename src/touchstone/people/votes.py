"""Pairwise votes in the Chatbot Arena battle format: one battle per row with ``model_a``,
``model_b`` and ``winner`` (``model_a``, ``model_b``, ``tie`` or ``tie (bothbad)``), as JSONL or CSV.
Every row is checked before anything is ranked; problems name file, line and field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from touchstone.data.loaders import Record, load_records
from touchstone.errors import InputValidationError, Problem
from touchstone.stats.pairwise import Battle

WINNERS: dict[str, float] = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}
"""The accepted ``winner`` values and A's score for each (a tie is half a win each way)."""


def _problem(record: Record, field: str | None, message: str) -> Problem:
    return Problem(record.source, record.line, field, message)


def battle_of(record: Record) -> tuple[Battle | None, list[Problem]]:
    """One row as a battle, or the problems that keep it from being one."""
    problems: list[Problem] = []
    names: list[str] = []
    for key in ("model_a", "model_b"):
        value = record.data.get(key)
        if not isinstance(value, str) or not value.strip():
            got = "nothing" if value is None else repr(value)[:80]
            problems.append(_problem(record, key, f"expected the name of a system, got {got}"))
        else:
            names.append(value.strip())
    winner = record.data.get("winner")
    if not isinstance(winner, str) or winner.strip() not in WINNERS:
        expected = ", ".join(repr(w) for w in WINNERS)
        got = "nothing" if winner is None else repr(winner)[:80]
        problems.append(_problem(record, "winner", f"expected one of {expected}, got {got}"))
    if len(names) == 2 and names[0] == names[1]:
        problems.append(_problem(record, "model_b", f"a system cannot battle itself ({names[0]!r})"))
    if problems:
        return None, problems
    assert isinstance(winner, str)
    return (names[0], names[1], WINNERS[winner.strip()]), []


def battles_from_records(records: Iterable[Record]) -> list[Battle]:
    """Battles from loaded rows; :class:`InputValidationError` listing every bad row."""
    battles: list[Battle] = []
    problems: list[Problem] = []
    for record in records:
        battle, found = battle_of(record)
        problems.extend(found)
        if battle is not None:
            battles.append(battle)
    if problems:
        raise InputValidationError(problems)
    if not battles:
        raise InputValidationError([Problem("votes", None, None, "no battles: expected at least one vote")])
    return battles


def load_battles(source: str | Path | Sequence[Mapping[str, Any]]) -> list[Battle]:
    """Battles from a JSONL or CSV file (or a list of dicts) in the battle format."""
    return battles_from_records(load_records(source))


def write_votes(path: str | Path, votes: Iterable[Mapping[str, Any]]) -> None:
    """Votes as JSONL (one battle per line), readable by :func:`load_battles`."""
    with open(path, "w", encoding="utf-8") as fh:
        for vote in votes:
            fh.write(json.dumps(dict(vote), ensure_ascii=False) + "\n")
