"""Token estimates for when Ollama does not report counts (it omits them for cached prompts).

The estimate is a measured-ratio rule, not a tokenizer: about 4 characters per token, the usual
ratio for English prose and JSON under Llama/Qwen BPE vocabularies. It is used only for budget
bookkeeping when real counts are missing, for trimming history, and to notice a prompt that
Ollama silently truncated (reported prompt tokens far below this estimate).
"""

from __future__ import annotations

import math
from typing import Any

from turn.events import Usage

CHARS_PER_TOKEN = 4.0
TRUNCATION_RATIO = 0.5
"""A prompt reported under this share of its estimate was truncated by the model server."""


def estimate_tokens(text: str) -> int:
    """Approximate token count of ``text``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def count_usage(
    usage: Usage, reported: Any, sent_estimate: int, written_estimate: int, num_ctx: int | None
) -> str | None:
    """Add one model call's tokens to ``usage``; why the prompt was truncated, or None.

    ``reported`` is the connector's usage (``prompt_tokens``, ``completion_tokens``); without both, the estimates
    count and ``usage`` is marked estimated. A prompt over ``num_ctx`` reported under `TRUNCATION_RATIO` of its
    estimate was cut by the server.
    """
    prompt = getattr(reported, "prompt_tokens", None)
    completion = getattr(reported, "completion_tokens", None)
    truncated = None
    if prompt is None or completion is None:
        usage.estimated = True
        prompt, completion = sent_estimate, written_estimate
    elif num_ctx and sent_estimate > num_ctx and prompt < sent_estimate * TRUNCATION_RATIO:
        truncated = (
            f"the prompt was truncated by the model server (reported {prompt} prompt tokens, about "
            f"{sent_estimate} sent; Ollama.NumCtx is {num_ctx})"
        )
    usage.prompt_tokens += int(prompt)
    usage.completion_tokens += int(completion)
    return truncated
