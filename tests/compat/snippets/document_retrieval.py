# mypy: ignore-errors
"""Document retrieval metrics (NDCG, XDCG, fidelity, holes) with default and custom settings."""
from azure.ai.evaluation import DocumentRetrievalEvaluator

from _emit import emit

retrieval_ground_truth = [
    {"document_id": "1", "query_relevance_label": 4},
    {"document_id": "2", "query_relevance_label": 2},
    {"document_id": "3", "query_relevance_label": 3},
    {"document_id": "4", "query_relevance_label": 1},
    {"document_id": "5", "query_relevance_label": 0},
]
retrieved_documents = [
    {"document_id": "2", "relevance_score": 45.1},
    {"document_id": "6", "relevance_score": 35.8},
    {"document_id": "3", "relevance_score": 29.2},
    {"document_id": "5", "relevance_score": 25.4},
    {"document_id": "7", "relevance_score": 18.8},
]
default = DocumentRetrievalEvaluator()
custom = DocumentRetrievalEvaluator(
    ground_truth_label_min=0, ground_truth_label_max=4, ndcg_threshold=0.6, xdcg_threshold=40.0,
    fidelity_threshold=0.4, top1_relevance_threshold=3.0, top3_max_relevance_threshold=3.0,
    total_retrieved_documents_threshold=4, total_ground_truth_documents_threshold=4,
)
emit({
    "default": default(retrieval_ground_truth=retrieval_ground_truth, retrieved_documents=retrieved_documents),
    "custom": custom(retrieval_ground_truth=retrieval_ground_truth, retrieved_documents=retrieved_documents),
})
