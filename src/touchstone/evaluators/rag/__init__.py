"""RAG metrics (ragas' names, touchstone's calls): claim-based faithfulness and context recall,
context precision, context entity recall, answer similarity and answer correctness. The shared claim
primitives are in :mod:`touchstone.evaluators.rag.claims`."""
