from memory import DocumentIndex, IngestManifest, ingest, retrieval_questions
from memory.evaluation import evaluate_index


async def test_recall_at_5_on_the_labeled_questions_is_at_least_0_9(
    memory_index: DocumentIndex, manifest: IngestManifest
) -> None:
    questions = retrieval_questions()
    assert len(questions) == 72
    await ingest(None, memory_index, manifest)
    scores = await evaluate_index(memory_index, questions, depth=5)
    assert scores.recall_at_5 >= 0.9, scores
