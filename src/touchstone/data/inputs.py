"""What a metric reads from a row, as values the data layer checks rows against.

An :class:`InputSpec` names one input and its kind; a :class:`ReadsInputs` is anything that declares
its inputs and the sets of them it accepts (every evaluator does). Validation of rows
(:mod:`touchstone.data.validation`) works from these alone, so the data layer never depends on the
evaluators built on top of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from touchstone.data.kinds import InputKind


@dataclass(frozen=True)
class InputSpec:
    """One named input of an evaluator."""

    name: str
    kind: InputKind = "text"
    required: bool = True
    description: str = ""


class ReadsInputs(Protocol):
    """Something that reads inputs from rows: its inputs, and the sets of them it can score with."""

    @property
    def inputs(self) -> Sequence[InputSpec]:
        """The inputs it reads, in order."""
        ...

    def required_modes(self) -> tuple[tuple[str, ...], ...]:
        """Alternative sets of required input names; a row must hold every name of one of them."""
        ...


def input_spec(reader: ReadsInputs, name: str) -> InputSpec | None:
    """The input ``name`` of ``reader`` (None when it reads no such input)."""
    for spec in reader.inputs:
        if spec.name == name:
            return spec
    return None
