"""A tiny question-answering application to evaluate: it looks the question up in a small knowledge
base of an outdoor-gear shop and answers with the passage that shares the most words with it.

- ``answer(query)`` is what ``evaluate(target=answer)`` and ``touchstone eval --target
  examples/app.py:answer`` call per row: it returns the response and the context it used.
- ``callback(...)`` is the same application behind the async chat protocol of the simulators
  (``touchstone simulate --target examples/app.py:callback``).
"""

from __future__ import annotations

import re
from typing import Any

KNOWLEDGE_BASE = {
    "kb-01": "The Trailglow 300 lantern runs 40 hours on its high setting and 120 hours on low. "
             "It charges over USB-C in 4 hours.",
    "kb-02": "The Nightjar lantern runs 12 hours on high. It takes three AA batteries and weighs 210 grams.",
    "kb-03": "The Ridgeline 2 is a two-person, three-season tent weighing 1.6 kg. "
             "It pitches in about four minutes with a single hub pole.",
    "kb-04": "The Ridgeline 4 sleeps four people and weighs 3.9 kg. It has two doors and two vestibules.",
    "kb-05": "We ship to the United States and Canada. Orders to Canada arrive in 5 to 7 business days; "
             "US orders in 2 to 4.",
    "kb-06": "Unused items can be returned within 60 days for a full refund. "
             "Used gear can be exchanged within 30 days.",
    "kb-07": "The Cinder stove burns isobutane canisters and boils one litre of water "
             "in 3 minutes 20 seconds.",
    "kb-08": "Never use the Cinder stove inside a tent or any closed space: it produces carbon monoxide.",
    "kb-09": "All tents carry a five-year warranty against manufacturing defects. "
             "Lanterns and stoves carry two years.",
}

_REFUSAL = "I can only answer questions about our shop's products and policies."


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def answer(query: str) -> dict[str, Any]:
    """The application's answer to one question, with the passage it was drawn from."""
    asked = _words(query)
    doc_id, passage = max(KNOWLEDGE_BASE.items(), key=lambda item: len(asked & _words(item[1])))
    if not asked & _words(passage):
        return {"response": _REFUSAL, "context": []}
    return {"response": passage.split(". ")[0].rstrip(".") + ".", "context": [passage], "doc_id": doc_id}


async def callback(
    messages: dict[str, Any], stream: bool = False, session_state: Any = None, context: Any = None
) -> dict[str, Any]:
    """The simulators' chat protocol: answer the last user message and append the reply."""
    query = messages["messages"][-1]["content"]
    reply = answer(query)["response"]
    messages["messages"].append({"role": "assistant", "content": reply})
    return {"messages": messages["messages"], "stream": stream, "session_state": session_state,
            "context": context}
