"""Token estimates for when Ollama does not report counts (it omits them for cached prompts).

The estimate is a measured-ratio rule, not a tokenizer: about 4 characters per token, the usual
ratio for English prose and JSON under Llama/Qwen BPE vocabularies. It is used only for budget
bookkeeping when real counts are missing, for trimming history, and to notice a prompt that
Ollama silently truncated (reported prompt tokens far below this estimate).
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4.0


def estimate_tokens(text: str) -> int:
    """Approximate token count of ``text``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0
