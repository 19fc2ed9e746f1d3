"""Human annotation tasks, kept in the store: Likert ratings (1-5 per dimension) of one response,
or pairwise preferences (A, B or a tie per dimension) between two.

A task is made from a stored run's rows (:func:`create_task_from_run`; with ``against=`` a second
run, pairwise), from records of a dataset file (:func:`create_task_from_records`), or from the
active-learning queue (the queue's row indices given to :func:`create_task_from_run`). Each item
keeps what the annotator needs (query, context, the response or responses) and, server-side only,
which system wrote each response.

Annotators see the items in an order of their own (shuffled, seeded by the task and the annotator's
id: stable for one annotator, different between annotators), and in a pairwise item the two
responses on sides of their own (seeded the same way), as "A" and "B" without system names
(:func:`item_view`). Their answers (:func:`save_answers`) are stored in the original terms: a
preference names the system's slot as written (``a``: the first run's response), whatever side it
was shown on. Several annotators may answer the same item; each answer replaces that annotator's
earlier one. :func:`export_rows` gives the answers as rows for CSV/JSONL (Likert: ``row``, ``idx``,
``annotator``, ``dimension``, ``value``, what ``touchstone calibrate --human`` reads; pairwise also
``model_a``, ``model_b``, ``winner`` in the Chatbot Arena battle format); :func:`import_rows` reads
them back.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from touchstone.errors import InputValidationError, Problem
from touchstone.people.feedback import interaction_ids
from touchstone.store.base import Store
from touchstone.store.people import Answer, AnswerLine, Item, Task, TaskCounts

LIKERT_DIMENSIONS = ("relevance", "coherence", "fluency", "helpfulness", "safety")
PAIRWISE_DIMENSIONS = ("overall",)
CHOICES = ("a", "b", "tie")
WINNER = {"a": "model_a", "b": "model_b", "tie": "tie"}
KINDS = ("likert", "pairwise")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ .-]{0,63}$")
QUERY_KEYS = ("query", "question", "prompt", "input")
RESPONSE_KEYS = ("response", "answer", "output", "completion")
CONTEXT_KEYS = ("context", "contexts", "documents", "retrieved_context")


class AnnotationError(InputValidationError):
    """A task, an item, an annotator id or an answer is not what was expected."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def check_annotator(annotator: str) -> str:
    """An annotator id as given, or :class:`AnnotationError`: 1-64 letters, digits, ``_ . -`` or spaces."""
    if not isinstance(annotator, str) or not _NAME.match(annotator):
        raise AnnotationError("annotator must be 1-64 characters: letters, digits, '_', '.', '-' or spaces, "
                              f"starting with a letter, digit or '_'; got {str(annotator)[:80]!r}")
    return annotator


def check_dimensions(kind: str, dimensions: Sequence[str] | None) -> tuple[str, ...]:
    """The task's dimensions (the defaults of its kind when none are given), checked."""
    if kind not in KINDS:
        raise AnnotationError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    dims = tuple(d.strip() for d in (dimensions or ())) or (
        LIKERT_DIMENSIONS if kind == "likert" else PAIRWISE_DIMENSIONS)
    for d in dims:
        if not _NAME.match(d):
            raise AnnotationError(
                f"a dimension is a short name (letters, digits, '_', '.', '-'), got {d[:80]!r}")
    if len(set(dims)) != len(dims):
        raise AnnotationError(f"dimensions repeat a name: {', '.join(dims)}")
    return dims


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _first(data: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if data.get(key) not in (None, ""):
            return data[key]
    return None


def content_of(data: Mapping[str, Any], target: Mapping[str, Any] | None = None) -> dict[str, str]:
    """What an annotator reads of one row: its query, context and response (a conversation's turns
    before its last answer as the query, the last answer as the response)."""
    merged = {**data, **(target or {})}
    query, response = _first(merged, QUERY_KEYS), _first(merged, RESPONSE_KEYS)
    conversation = merged.get("conversation")
    if isinstance(conversation, Mapping) and isinstance(conversation.get("messages"), list):
        turns = [m for m in conversation["messages"] if isinstance(m, Mapping)]
        last = max((i for i, m in enumerate(turns) if m.get("role") == "assistant"), default=None)
        if last is not None:
            response = response or turns[last].get("content")
            query = query or "\n\n".join(f"{m.get('role')}: {_text(m.get('content'))}" for m in turns[:last])
    context = _text(_first(merged, CONTEXT_KEYS))
    return {"query": _text(query), "context": context, "response": _text(response)}


def _task_id() -> str:
    return "task-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _insert_task(store: Store, kind: str, dims: tuple[str, ...], name: str | None, source: str,
                 items: list[Item]) -> Task:
    if not items:
        raise AnnotationError("the task would have no items: nothing to annotate")
    task = Task(_task_id(), name, kind, dims, source, _now())
    store.people.add_task(task, items)
    return task


def _run_rows(store: Store, run_id: str) -> dict[int, dict[str, str]]:
    if store.get_run(run_id) is None:
        raise AnnotationError(f"no run {run_id!r} in this store")
    return {row.idx: content_of(row.data if isinstance(row.data, dict) else {}, row.target)
            for row in store.get_rows(run_id)}


def row_keys(store: Store, run_id: str) -> dict[int, str]:
    """How exports name a run's rows (what ``touchstone calibrate --human`` matches): each row's
    ``id`` where every row has one, else its 0-based index."""
    ids: dict[int, Any] = {}
    for idx, data in store.people.row_inputs(run_id).items():
        decoded = json.loads(data) if data else {}
        ids[idx] = decoded.get("id") if isinstance(decoded, dict) else None
    if ids and all(v is not None and not isinstance(v, (dict, list)) for v in ids.values()):
        return {i: str(v).strip() for i, v in ids.items()}
    return {i: str(i) for i in ids}


def _run_name(store: Store, run_id: str) -> str:
    info = store.get_run(run_id)
    return str(info.name) if info is not None and info.name else run_id


def create_task_from_run(
    store: Store, run_id: str, dimensions: Sequence[str] | None = None, name: str | None = None,
    against: str | None = None, indices: Sequence[int] | None = None, id_column: str | None = None,
) -> Task:
    """A task over a stored run's rows (all, or ``indices``: e.g. the active-learning queue's).
    Likert by default; with ``against`` (a second run on the same inputs) pairwise, each row of
    ``run_id`` paired with the row of ``against`` that has the same interaction id (its ``id`` /
    ``interaction_id`` column, or ``id_column``), else the same index."""
    kind = "pairwise" if against else "likert"
    dims = check_dimensions(kind, dimensions)
    rows = _run_rows(store, run_id)
    keys = interaction_ids(store, run_id, id_column)
    names_of = row_keys(store, run_id)
    wanted = list(rows) if indices is None else list(dict.fromkeys(int(i) for i in indices))
    missing = [i for i in wanted if i not in rows]
    if missing:
        raise AnnotationError(f"run {run_id!r} has no row {missing[0]} ({len(missing)} missing)")
    items: list[Item] = []
    if against is None:
        system = _run_name(store, run_id)
        for n, idx in enumerate(wanted):
            row = rows[idx]
            items.append(Item(n, run_id, idx, names_of.get(idx), {
                "query": row["query"], "context": row["context"],
                "responses": [{"system": system, "text": row["response"]}]}))
        return _insert_task(store, kind, dims, name, f"run {run_id}", items)
    other = _run_rows(store, against)
    other_keys = {k: i for i, k in interaction_ids(store, against, id_column).items()}
    names = (_run_name(store, run_id), _run_name(store, against))
    if names[0] == names[1]:
        names = (run_id, against)
    for idx in wanted:
        match = other_keys.get(keys.get(idx, ""), idx if idx in other else None)
        if match is None or match not in other:
            continue
        row = rows[idx]
        items.append(Item(len(items), run_id, idx, names_of.get(idx), {
            "query": row["query"], "context": row["context"],
            "responses": [{"system": names[0], "text": row["response"]},
                          {"system": names[1], "text": other[match]["response"]}]}))
    return _insert_task(store, kind, dims, name, f"runs {run_id} vs {against}", items)


def create_task_from_records(
    store: Store, records: Iterable[Mapping[str, Any]], dimensions: Sequence[str] | None = None,
    name: str | None = None, source: str = "dataset",
) -> Task:
    """A task from dataset records: Likert when they have a ``response``; pairwise when they have
    ``response_a`` and ``response_b`` (with ``model_a`` / ``model_b`` naming the systems, kept from
    the annotators). ``query`` and ``context`` are shown as they are; an ``id`` column names the row."""
    rows = list(records)
    if not rows:
        raise AnnotationError("the dataset has no records")
    kind = "pairwise" if "response_a" in rows[0] or "response_b" in rows[0] else "likert"
    dims = check_dimensions(kind, dimensions)
    problems: list[Problem] = []
    items: list[Item] = []
    for n, rec in enumerate(rows):
        content = content_of(rec)
        key = _text(rec.get("id")) or str(n)
        if kind == "pairwise":
            need = [k for k in ("response_a", "response_b") if rec.get(k) in (None, "")]
            responses = [{"system": _text(rec.get(f"model_{s}")) or f"model_{s}",
                          "text": _text(rec.get(f"response_{s}"))} for s in "ab"]
        else:
            need = [] if content["response"] else ["response"]
            responses = [{"system": _text(rec.get("model")) or "response", "text": content["response"]}]
        problems.extend(Problem(source, n + 1, k, f"expected the {k} text, got nothing") for k in need)
        items.append(Item(n, None, n, key, {"query": content["query"], "context": content["context"],
                                            "responses": responses}))
    if problems:
        raise AnnotationError(problems)
    return _insert_task(store, kind, dims, name, source, items)


def get_task(store: Store, task_id: str) -> Task:
    """One task, or :class:`AnnotationError` when there is none."""
    task = store.people.task(task_id)
    if task is None:
        raise AnnotationError(f"no annotation task {task_id!r} in this store")
    return task


def list_tasks(store: Store) -> list[TaskCounts]:
    """Every task, newest first, with its number of items and of annotators who answered
    (``(task, items, annotators)``)."""
    return store.people.tasks()


def items_of(store: Store, task_id: str) -> list[Item]:
    """The task's items, by number."""
    return store.people.items(task_id)


def _rng(*parts: str) -> random.Random:
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def order_for(task_id: str, annotator: str, n_items: int) -> list[int]:
    """The order in which ``annotator`` sees the task's ``n_items`` items: a shuffle seeded by the task
    and the annotator's id (the same every time for one annotator, different between annotators)."""
    order = list(range(n_items))
    _rng("order", task_id, annotator).shuffle(order)
    return order


def sides_for(task_id: str, annotator: str, item: int, n_responses: int) -> list[int]:
    """Which stored response each shown slot holds for this annotator (``[1, 0]``: the second
    response is shown as A): seeded like :func:`order_for`, so position bias averages out."""
    sides = list(range(n_responses))
    _rng("sides", task_id, annotator, str(item)).shuffle(sides)
    return sides


def item_view(task: Task, item: Item, annotator: str) -> dict[str, Any]:
    """One item as the annotator sees it: query, context and the responses as slots ``A``/``B``
    (on the annotator's own sides), without any system name."""
    responses = item.data.get("responses") or []
    sides = sides_for(task.id, annotator, item.item, len(responses))
    return {"item": item.item, "query": item.data.get("query", ""), "context": item.data.get("context", ""),
            "responses": [{"slot": "AB"[i] if len(responses) > 1 else "",
                           "text": responses[s].get("text", "")} for i, s in enumerate(sides)]}


def answers_of(store: Store, task_id: str, annotator: str | None = None) -> list[Answer]:
    """``(item, annotator, dimension, value)`` of the task's answers (a number for Likert, ``a`` /
    ``b`` / ``tie`` in stored terms for pairwise), by item, annotator, dimension."""
    return store.people.answers(task_id, annotator)


def _checked_answer(task: Task, n_items: int, answer: Mapping[str, Any], where: str) -> tuple[int, str, Any]:
    item, dim, value = answer.get("item"), answer.get("dimension"), answer.get("value")
    if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < n_items:
        raise AnnotationError(f"{where}item must be an item number from 0 to {n_items - 1}, got {item!r}")
    if dim not in task.dimensions:
        raise AnnotationError(
            f"{where}dimension must be one of {', '.join(task.dimensions)}, got {str(dim)[:80]!r}")
    if task.kind == "likert":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in (1, 2, 3, 4, 5):
            raise AnnotationError(f"{where}value must be a whole number from 1 to 5, got {str(value)[:40]!r}")
        return item, str(dim), float(value)
    if value not in CHOICES:
        raise AnnotationError(f"{where}value must be one of a, b, tie, got {str(value)[:40]!r}")
    return item, str(dim), value


def save_answers(
    store: Store, task_id: str, annotator: str, answers: Iterable[Mapping[str, Any]], *, shown: bool = False,
) -> int:
    """Store an annotator's answers (``{"item", "dimension", "value"}``; each replaces that
    annotator's earlier answer to the same item and dimension); returns how many. With
    ``shown=True`` a pairwise value names the slot as shown to this annotator (``a`` the left one) and
    is turned into stored terms. Checked as a whole before anything is written."""
    task = get_task(store, task_id)
    check_annotator(annotator)
    n_items = store.people.item_count(task_id)
    lines: list[AnswerLine] = []
    stamp = _now()
    for i, answer in enumerate(answers):
        if not isinstance(answer, Mapping):
            raise AnnotationError(f"answers[{i}] must be an object with item, dimension and value")
        item, dim, value = _checked_answer(task, n_items, answer, f"answers[{i}].")
        if task.kind == "pairwise":
            if shown and value != "tie":
                value = "ab"[sides_for(task.id, annotator, item, 2)["ab".index(value)]]
            lines.append(AnswerLine(task.id, item, annotator, dim, None, value, stamp))
        else:
            lines.append(AnswerLine(task.id, item, annotator, dim, value, None, stamp))
    store.people.save_answers(lines)
    return len(lines)


def progress(store: Store, task: Task, annotator: str) -> dict[str, Any]:
    """How far ``annotator`` is: items with every dimension answered, the total, and the position
    (in their order) of the first item still to do, where they resume."""
    items = items_of(store, task.id)
    done: dict[int, set[str]] = {}
    for item, _, dim, _ in answers_of(store, task.id, annotator):
        done.setdefault(item, set()).add(dim)
    complete = {i for i, dims in done.items() if dims >= set(task.dimensions)}
    order = order_for(task.id, annotator, len(items))
    resume = next((pos for pos, i in enumerate(order) if i not in complete), max(len(order) - 1, 0))
    return {"done": len(complete), "total": len(items), "resume": resume}


def export_rows(store: Store, task_id: str) -> list[dict[str, Any]]:
    """The task's answers as flat rows: ``task``, ``item``, ``run_id``, ``idx``, ``row`` (the row's
    ``id``, or its index: see :func:`row_keys`), ``annotator``, ``dimension``, ``value``; pairwise
    rows also ``model_a``, ``model_b`` and ``winner`` (``model_a``, ``model_b`` or ``tie``)."""
    task = get_task(store, task_id)
    items = {i.item: i for i in items_of(store, task_id)}
    rows = []
    for item, annotator, dim, value in answers_of(store, task_id):
        it = items[item]
        row: dict[str, Any] = {"task": task_id, "item": item, "run_id": it.run_id, "idx": it.idx,
                               "row": it.row_key, "annotator": annotator, "dimension": dim,
                               "value": _plain(task.kind, value)}
        if task.kind == "pairwise":
            systems = [r.get("system") for r in it.data.get("responses", [])]
            row.update({"model_a": systems[0], "model_b": systems[1], "winner": WINNER[str(value)]})
        rows.append(row)
    return rows


def _plain(kind: str, value: Any) -> Any:
    """A Likert value as a whole number where it is one (``4``, not ``4.0``)."""
    return int(value) if kind == "likert" and float(value).is_integer() else value


def import_rows(store: Store, task_id: str, rows: Iterable[Mapping[str, Any]]) -> int:
    """Answers read back from :func:`export_rows`' shape (``item``, ``annotator``, ``dimension``,
    ``value``; a pairwise ``value`` may be given as ``winner`` instead); returns how many."""
    task = get_task(store, task_id)
    by_annotator: dict[str, list[dict[str, Any]]] = {}
    back = {v: k for k, v in WINNER.items()}
    for n, row in enumerate(rows):
        value = row.get("value")
        if task.kind == "pairwise" and value in (None, "") and row.get("winner") is not None:
            value = back.get(str(row["winner"]).replace("tie (bothbad)", "tie"), row["winner"])
        elif task.kind == "likert" and isinstance(value, str):
            value = float(value) if re.fullmatch(r"\s*[1-5](\.0*)?\s*", value) else value
        try:
            item = int(str(row.get("item")))
        except ValueError:
            raise AnnotationError(
                f"line {n + 1}: item must be an item number, got {row.get('item')!r}") from None
        annotator = check_annotator(str(row.get("annotator") or ""))
        by_annotator.setdefault(annotator, []).append(
            {"item": item, "dimension": row.get("dimension"), "value": value})
    total = 0
    for annotator, answers in by_annotator.items():
        total += save_answers(store, task.id, annotator, answers)
    return total


__all__ = [
    "CHOICES",
    "LIKERT_DIMENSIONS",
    "PAIRWISE_DIMENSIONS",
    "AnnotationError",
    "Item",
    "Task",
    "answers_of",
    "check_annotator",
    "check_dimensions",
    "content_of",
    "create_task_from_records",
    "create_task_from_run",
    "export_rows",
    "get_task",
    "import_rows",
    "item_view",
    "items_of",
    "list_tasks",
    "order_for",
    "progress",
    "row_keys",
    "save_answers",
    "sides_for",
]
