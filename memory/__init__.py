"""The retrieval half: embeddings, the Qdrant index of maintenance manuals, chunking and ingestion."""
