"""The retrieval half: embeddings, the Qdrant index of maintenance manuals, chunking and ingestion.

Importing this package loads no model and opens no store: `Embedder` loads its model on first use and
`DocumentIndex` opens Qdrant on first use.
"""

from memory.chunking import Chunk, ChunkingOptions, chunk_markdown
from memory.config import EmbeddingConfig, IndexConfig, StoreMode
from memory.corpus import LabeledQuestion, corpus_dir, corpus_files, retrieval_questions
from memory.documents import Skipped
from memory.embeddings import Embedder, SentenceTransformerEmbeddings
from memory.errors import (
    DocumentIndexError,
    EmbeddingModelError,
    EmptyIndexError,
    IndexLockedError,
    IndexUnavailableError,
    InvalidSearchError,
)
from memory.index import DocumentIndex, SearchHit
from memory.ingest import IngestProgress, IngestReport, ingest
from memory.manifest import IngestManifest

__all__ = [
    "Chunk",
    "ChunkingOptions",
    "DocumentIndex",
    "DocumentIndexError",
    "Embedder",
    "EmbeddingConfig",
    "EmbeddingModelError",
    "EmptyIndexError",
    "IndexConfig",
    "IndexLockedError",
    "IndexUnavailableError",
    "IngestManifest",
    "IngestProgress",
    "IngestReport",
    "InvalidSearchError",
    "LabeledQuestion",
    "SearchHit",
    "SentenceTransformerEmbeddings",
    "Skipped",
    "StoreMode",
    "chunk_markdown",
    "corpus_dir",
    "corpus_files",
    "ingest",
    "retrieval_questions",
]
