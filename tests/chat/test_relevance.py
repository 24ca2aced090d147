"""Domain relevance for the local model's routing: the real embedding model, the tools and the shipped manuals."""

from pathlib import Path
from typing import Any

from semantic_kernel.connectors.ai.function_calling_utils import kernel_function_metadata_to_function_call_format

from chat.local.settings import LocalChatPromptExecutionSettings
from chat.relevance import DomainRelevance
from kernel_setup import AppContext
from memory import DocumentIndex, IndexConfig, IngestManifest, ingest
from storage import open_database
from tests.memory.support import shared_embedder

THRESHOLD = LocalChatPromptExecutionSettings().relevance_threshold
OFF_TOPIC = LocalChatPromptExecutionSettings().off_topic_relevance


def advertised(app: AppContext) -> list[dict[str, Any]]:
    return [
        kernel_function_metadata_to_function_call_format(f) for f in app.kernel.get_full_list_of_function_metadata()
    ]


async def test_manual_questions_score_above_the_threshold_and_small_talk_far_below(
    app: AppContext, tmp_path: Path
) -> None:
    tools = advertised(app)
    index = DocumentIndex(IndexConfig(path=":memory:"), shared_embedder())
    database = await open_database(tmp_path / "manifest.db")
    try:
        relevance = DomainRelevance(index)
        seals = "Why do mechanical seals leak?"
        before = await relevance(seals, tools)  # an empty index: the tool descriptions alone
        assert 0.0 < before < THRESHOLD
        await ingest(None, index, IngestManifest(database, "manuals"))
        for question in (seals, "How do I verify zero energy before working on a pump?", "What is NPSH?"):
            assert await relevance(question, tools) >= THRESHOLD, question
        for small_talk in ("What is the capital of France?", "Tell me a joke.", "Thanks, that's all for now."):
            assert await relevance(small_talk, tools) < OFF_TOPIC, small_talk
        assert await relevance("   ", tools) == 0.0
        assert await relevance("List all pumps.", []) < await relevance("List all pumps.", tools)  # a description
    finally:
        await index.close()
        await database.close()
