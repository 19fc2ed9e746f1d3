"""Validation of the whole input against what the chosen evaluators need, before anything runs.

The evaluators are seen only as what they read (:class:`~touchstone.data.inputs.ReadsInputs`: input
specs and their accepted sets), so this module depends on no evaluator."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from touchstone._exceptions import ErrorCategory, ErrorTarget
from touchstone.data.inputs import ReadsInputs, input_spec
from touchstone.data.kinds import check_value
from touchstone.data.loaders import Record
from touchstone.data.mapping import Ref, resolve
from touchstone.errors import InputValidationError, Problem


def evaluator_inputs(
    evaluator: ReadsInputs,
    mapping: Mapping[str, Ref],
    data: Mapping[str, Any],
    target_out: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The keyword inputs for one evaluator on one row (only the inputs that are present)."""
    inputs: dict[str, Any] = {}
    for spec in evaluator.inputs:
        found, value, _ = resolve(spec.name, mapping.get(spec.name), data, target_out)
        if found:
            inputs[spec.name] = value
    return _select_mode(evaluator, inputs)


def _select_mode(evaluator: ReadsInputs, inputs: dict[str, Any]) -> dict[str, Any]:
    """With alternative input modes (single turn or conversation), keep one coherent set: a row
    that satisfies the first listed mode is scored in it."""
    modes = evaluator.required_modes()
    if len(modes) <= 1:
        return inputs
    for mode in modes:
        if set(mode) <= set(inputs):
            other = {n for m in modes if m != mode for n in m} - set(mode)
            return {k: v for k, v in inputs.items() if k not in other}
    return inputs


def validate_records(
    records: Sequence[Record],
    evaluators: Mapping[str, ReadsInputs],
    mappings: Mapping[str, Mapping[str, Ref]],
    has_target: bool,
) -> None:
    """Raise :class:`InputValidationError` listing every problem (first 20 shown) or return."""
    check = Validation(evaluators, mappings, has_target)
    check.add(records)
    check.finish()


class Validation:
    """:func:`validate_records` over records given in batches (a file read in one streaming pass):
    the same problems in the same order, holding only the problems and the set of column names."""

    def __init__(
        self,
        evaluators: Mapping[str, ReadsInputs],
        mappings: Mapping[str, Mapping[str, Ref]],
        has_target: bool,
    ) -> None:
        self.evaluators, self.mappings, self.has_target = evaluators, mappings, has_target
        self.columns: set[str] = set()
        self.source: str | None = None
        # (source, line, field, message) -> evaluator names, so one missing field is reported once
        self.found: dict[tuple[str, int, str, str], list[str]] = {}
        # Evaluators that read the same inputs the same way are checked once per row.
        self.groups: dict[Any, tuple[ReadsInputs, Mapping[str, Ref], list[str]]] = {}
        for name, ev in evaluators.items():
            mapping = mappings.get(name, {})
            key = (
                tuple((s.name, s.kind, s.required) for s in ev.inputs),
                ev.required_modes(),
                tuple(sorted((k, str(v)) for k, v in mapping.items())),
            )
            self.groups.setdefault(key, (ev, mapping, []))[2].append(name)

    def add(self, records: Sequence[Record]) -> None:
        """Check a batch of records."""
        if records and self.source is None:
            self.source = records[0].source
        found = self.found
        for record in records:
            self.columns.update(record.data)
            for ev, mapping, names in self.groups.values():
                for field, message in _row_problems(ev, mapping, record.data, self.has_target):
                    found.setdefault((record.source, record.line, field, message), []).extend(names)

    def finish(self, reading: Sequence[Problem] = ()) -> None:
        """Raise :class:`InputValidationError` with every problem found, or return. ``reading``:
        problems found while reading the file (a line that is not JSON...), listed first, so that
        one broken line does not hide what is wrong with the others."""
        problems = _mapping_columns_exist(self.columns, self.source, self.mappings, self.has_target)
        if problems and not reading:
            raise InputValidationError(
                problems, category=ErrorCategory.MISSING_FIELD, target=ErrorTarget.EVALUATE
            )
        if reading:  # the columns of rows that could not be read are unknown: no mapping check
            problems = list(reading)
        order = {name: i for i, name in enumerate(self.evaluators)}
        inputs = {spec.name for ev in self.evaluators.values() for spec in ev.inputs}
        hints: dict[str, str] = {}
        for (source, line, field, message), names in self.found.items():
            names.sort(key=order.__getitem__)
            text = f"{message} (needed by {', '.join(names)})"
            if message.startswith("missing") and field in inputs:
                if field not in hints:
                    column = column_for(field, self.columns - inputs)
                    hints[field] = "" if column is None else (
                        f'; the data has a column "{column}": --map {field}={column} '
                        f'(in Python, column_mapping {{"{field}": "${{data.{column}}}"}})'
                    )
                text += hints[field]
            problems.append(Problem(source, line, field, text))
        if reading:
            raise InputValidationError(problems)
        if problems:
            # the SDK's classification: inputs absent from the data are MISSING_FIELD, wrong ones
            # INVALID_VALUE
            missing = all(message.startswith("missing") for (_, _, _, message) in self.found)
            category = ErrorCategory.MISSING_FIELD if missing else ErrorCategory.INVALID_VALUE
            raise InputValidationError(problems, category=category, target=ErrorTarget.EVALUATE)


SYNONYMS: dict[str, tuple[str, ...]] = {
    "response": ("answer", "output", "completion", "prediction", "generated", "reply", "response"),
    "ground_truth": ("reference", "expected", "truth", "gold", "label", "target", "ideal"),
    "query": ("question", "prompt", "input", "instruction", "query", "ask"),
    "context": ("context", "document", "passage", "retrieved", "docs", "source", "evidence"),
}
"""Words a column's name often has when it holds an input under another name."""


def column_for(field: str, columns: set[str]) -> str | None:
    """The column of the data most likely to hold input ``field`` (``answer_text`` for
    ``response``), or None: a column whose name has one of the field's usual words, else one whose
    name is close to the field's."""
    import difflib

    names = sorted(str(c) for c in columns)
    words = SYNONYMS.get(field, (field,))
    by_word = [c for c in names if any(w in c.lower() for w in words)]
    if by_word:
        return min(by_word, key=lambda c: (-difflib.SequenceMatcher(None, field, c.lower()).ratio(), c))
    close = difflib.get_close_matches(field, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _row_problems(
    ev: ReadsInputs, mapping: Mapping[str, Ref], data: Mapping[str, Any], has_target: bool
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    present: set[str] = set()
    fields: dict[str, str] = {}
    for spec in ev.inputs:
        ref = mapping.get(spec.name)
        found, value, field = resolve(spec.name, ref, data, None)
        fields[spec.name] = field
        if found:
            present.add(spec.name)
            err = check_value(spec.kind, value)
            if err:
                problems.append((field, err))
        elif has_target and (ref is None or ref.origin == "target"):
            present.add(spec.name)  # the target will produce it; checked when it does
    modes = ev.required_modes()
    if not any(set(mode) <= present for mode in modes):
        best = min(modes, key=lambda m: len(set(m) - present))
        missing = [n for n in best if n not in present]
        alt = ""
        if len(modes) > 1:
            alt = "; accepted input sets: " + " or ".join("(" + ", ".join(m) + ")" for m in modes)
        for name in missing:
            ref = mapping.get(name)
            what = f"mapped from {ref}" if ref is not None else "expected " + _expected(ev, name)
            problems.append((fields.get(name, name), f"missing ({what}){alt}"))
    return problems


def _expected(ev: ReadsInputs, name: str) -> str:
    spec = input_spec(ev, name)
    kind = spec.kind if spec else "any"
    return {
        "text": "a string",
        "texts": "a string or a list of strings",
        "context": "a string or a list of documents",
        "conversation": 'an object with "messages"',
        "messages": "a string or a list of messages",
        "ranked_documents": "a ranked list of document ids",
        "relevance_labels": "a list of relevance labels",
        "any": "a value",
    }[kind]


def _mapping_columns_exist(
    columns: set[str], first_source: str | None, mappings: Mapping[str, Mapping[str, Ref]], has_target: bool
) -> list[Problem]:
    """A ``${data.col}`` mapping whose column is in no row at all is reported once, with the columns
    the data does have; ``${target.col}`` without a target is an error too."""
    problems = []
    source = first_source if first_source is not None else "data"
    seen: set[str] = set()
    for ev_name, mapping in mappings.items():
        for inp, ref in mapping.items():
            if ref.origin == "target" and not has_target:
                problems.append(
                    Problem(
                        "evaluator_config",
                        None,
                        f"{ev_name}.column_mapping.{inp}",
                        f"{ref} refers to a target, but no target was given",
                    )
                )
            elif ref.origin == "data" and ref.path[0] not in columns and ref.column not in seen:
                seen.add(ref.column)
                problems.append(
                    Problem(
                        source,
                        None,
                        ref.column,
                        f"column mapping {inp} -> {ref} points to a column that is in no row; "
                        f"columns are: {', '.join(sorted(columns)) or '(none)'}",
                    )
                )
    return problems
