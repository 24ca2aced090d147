"""The plant's live sources, each read-only: values come in, nothing goes out to the plant."""
