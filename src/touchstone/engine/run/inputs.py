"""An evaluator's inputs for a row of the run: plain column lookups where they give what the full
mapping gives, else the mapping (column references, the target's outputs), checked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from touchstone.data.kinds import check_value
from touchstone.data.mapping import ALIASES, Ref
from touchstone.data.validation import evaluator_inputs
from touchstone.engine.executors import Plan, direct_inputs
from touchstone.evaluators.base import Evaluator


def direct_plan(ev: Evaluator, mapping: Mapping[str, Ref], has_target: bool) -> Plan:
    """For an evaluator whose inputs are plain columns of the row -- no column mapping, no target,
    one input mode, no conversation built from ``messages`` -- the ``(input, candidate columns)``
    lookups that give exactly what :func:`evaluator_inputs` gives; empty when that does not apply."""
    if has_target or mapping or len(ev.required_modes()) > 1:
        return ()
    if any(spec.name == "conversation" for spec in ev.inputs):
        return ()
    return tuple((spec.name, (spec.name, *ALIASES.get(spec.name, ()))) for spec in ev.inputs)


def row_inputs(
    ev: Evaluator,
    plan: Plan,
    mapping: Mapping[str, Ref],
    data: Mapping[str, Any],
    target: tuple[dict[str, Any] | None, str | None] | None,
) -> dict[str, Any] | str:
    """The evaluator's inputs for a row whose data is ``data`` (``target``: the target's output and
    error on it, None in a run without a target), or why they cannot be built (a target failure, or
    a target output of the wrong type)."""
    if plan:  # plain column lookups (validated before the run): no mapping, no target
        return direct_inputs(plan, data)
    target_out, target_error = target or (None, None)
    if target_error:
        return f"the target failed on this row: {target_error}"
    inputs = evaluator_inputs(ev, mapping, data, target_out)
    if target is not None:
        modes = ev.required_modes()
        if not any(set(m) <= set(inputs) for m in modes):
            missing = sorted(set(modes[0]) - set(inputs))
            return f"missing input(s) {', '.join(missing)} after the target ran"
        for key, value in inputs.items():
            spec = ev.input_spec(key)
            err = check_value(spec.kind, value) if spec else None
            if err:
                return f"input {key}: {err}"
    return inputs
