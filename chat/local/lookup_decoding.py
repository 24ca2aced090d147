"""Greedy decoding with prompt-lookup drafts: the model's own greedy choices, several per step where it copies.

The local model's answers and calls copy from their prompt: pump ids, names, values and units from the tool
results, tool names from the tool list. After each token, the last few tokens written are looked up in the
prompt and what followed them there is proposed as a draft; the model reads the token and the draft in one
batch and keeps the draft's tokens as far as each is its own greedy choice, plus its choice after the last one
kept. On CPUs with wide vector units one batch of four tokens costs about 1.4 times one token (2026-12-05 VM:
95 ms against 135 ms at position 2,400), so every kept draft token is nearly free. Every token is still the
model's greedy choice, but read in a batch its logits can differ from one token's in the last bits, so at a
near tie the text can differ from one-at-a-time decoding (1 of the bench's 8 answers). Only greedy decoding
is sped up this way (tool calls always; answers at temperature 0): a sampled answer would need the draft's
probabilities, and it keeps llama-cpp-python's own sampler.

Where the caller knows the form being written, it passes ``hints``: token sequences of that form (a tool call's
canonical text for each advertised tool and argument, `grammar.call_hints`). They are looked up first, and a
draft is taken from them only as far as every continuation matching the tail agrees: once ``alarms-list`` is
written, the rest of the only name it can begin and ``", "arguments": {`` follow in one batch. The prompt's tool
list spells calls differently (compact JSON, ``"name":"`` without a space), so plain lookup missed them: the
routed calls of the bench questions read 13 to 28 one-token batches.

`greedy_decode` is pure over `DraftModel` (tests use a scripted one); `chat.local.llama_engine` adapts
``llama_cpp.Llama`` to it.
"""

from __future__ import annotations

import codecs
from collections.abc import Generator, Sequence
from typing import Protocol

__all__ = ["DRAFT_LENGTH", "DraftModel", "Hints", "StopScanner", "draft_tokens", "greedy_decode"]

DRAFT_LENGTH = 3  # a batch of 4: about 1.4 times one token's cost; 8 cost 2.6 times
_NGRAM = (4, 3)  # the longest tail that occurs earlier wins; shorter ones matched too often to pay
_WINDOW = 6000  # tokens searched back from the end (the whole prompt of a conversation fits)
_HINT_NGRAM = (4, 3, 2, 1)  # hints are few and exact: even one token (``",`` before the next key) is specific


class DraftModel(Protocol):
    """What greedy decoding needs from the model."""

    def prefill(self, tokens: Sequence[int]) -> int:
        """Make ``tokens`` the context (reusing what is cached) and return the greedy next token."""
        ...

    def verify(self, tokens: Sequence[int]) -> list[int]:
        """Append ``tokens`` to the context in one batch; the greedy choice after each of them."""
        ...

    def rollback(self, keep: int) -> None:
        """Drop all but the first ``keep`` tokens of the context."""
        ...

    def context_length(self) -> int:
        """Tokens in the context now."""
        ...

    def is_end(self, token: int) -> bool:
        """Whether ``token`` ends generation (end of turn or of text)."""
        ...

    def piece(self, token: int) -> bytes:
        """The bytes ``token`` writes (nothing for special tokens)."""
        ...


def draft_tokens(context: Sequence[int], *, length: int = DRAFT_LENGTH) -> list[int]:
    """What followed the latest earlier occurrence of the context's last 4 (else 3) tokens, up to ``length``."""
    if length <= 0:
        return []
    start = max(0, len(context) - _WINDOW)
    for n in _NGRAM:
        if len(context) - start <= n:
            continue
        tail = list(context[-n:])
        for at in range(len(context) - n - 1, start - 1, -1):
            if context[at] == tail[0] and list(context[at : at + n]) == tail:
                return list(context[at + n : at + n + length])
    return []


class Hints:
    """Token sequences the text being written is expected to follow: what comes after each of their short tails."""

    def __init__(self, sequences: Sequence[Sequence[int]] = ()) -> None:
        self._after: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
        for sequence in sequences:
            for n in _HINT_NGRAM:
                for at in range(len(sequence) - n):  # a hint's end says nothing of what follows
                    tail = tuple(sequence[at : at + n])
                    self._after.setdefault(tail, set()).add(tuple(sequence[at + n : at + n + DRAFT_LENGTH]))

    def __bool__(self) -> bool:
        return bool(self._after)

    def draft(self, context: Sequence[int], *, length: int = DRAFT_LENGTH) -> list[int]:
        """What every hint continuing the context's longest known tail agrees on next, up to ``length`` tokens."""
        for n in _HINT_NGRAM:
            continuations = self._after.get(tuple(context[-n:])) if len(context) >= n else None
            if continuations:
                agreed: list[int] = []
                for column in zip(*continuations, strict=False):
                    if len(set(column)) > 1:
                        break
                    agreed.append(column[0])
                return agreed[:length]
        return []


class StopScanner:
    """Text as it may be shown, given stop strings: everything before the first stop, nothing that could start one."""

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = [s for s in stops if s]
        self._held = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        """Add ``text``; return what can be shown now (held back: a suffix that may begin a stop string)."""
        if self.stopped:
            return ""
        held = self._held + text
        cut = min((i for i in (held.find(s) for s in self._stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped = True
            self._held = ""
            return held[:cut]
        keep = max((k for s in self._stops for k in range(1, len(s)) if held.endswith(s[:k])), default=0)
        self._held = held[len(held) - keep :] if keep else ""
        return held[: len(held) - keep]

    def flush(self) -> str:
        """What was held back, at the end of generation (it never became a stop string)."""
        held, self._held = self._held, ""
        return "" if self.stopped else held


def greedy_decode(
    model: DraftModel, prompt: Sequence[int], *, max_tokens: int, stop: Sequence[str], hints: Hints | None = None
) -> Generator[str, None, str]:
    """Yield the greedy continuation of ``prompt`` as text pieces; return ``"stop"`` or ``"length"``.

    Drafts come from ``hints`` where they agree on one, else from the prompt and the text written so far.

    Draft tokens are kept only as far as each is the model's own choice; the context is left holding the prompt
    and every token read (none of a rejected draft; kept ones past a stop or the limit stay, as cache).
    """
    context = list(prompt)
    scanner = StopScanner(stop)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def finish(reason: str) -> Generator[str, None, str]:
        """What is still held (an incomplete character, a possible stop's beginning), then ``reason``."""
        if tail := scanner.feed(decoder.decode(b"", final=True)) + scanner.flush():
            yield tail
        return reason

    if max_tokens <= 0:
        return "length"
    choice = model.prefill(context)
    written = 0
    while not model.is_end(choice):
        if written + 1 >= max_tokens:  # the last token: nothing after it is needed, so it is not read
            tokens, choices, kept = [choice], [], 0
        else:
            length = min(DRAFT_LENGTH, max_tokens - written - 1)
            tail = [*context[1 - _HINT_NGRAM[0] :], choice]  # the longest tail the hints are indexed by
            draft = (hints.draft(tail, length=length) if hints else []) or draft_tokens(
                [*context, choice], length=length
            )
            choices = model.verify([choice, *draft])
            kept = 0
            while kept < len(draft) and choices[kept] == draft[kept]:
                kept += 1
            if kept < len(draft):
                model.rollback(model.context_length() - (len(draft) - kept))
            tokens = [choice, *draft[:kept]]
        for token in tokens:
            if model.is_end(token):  # a kept draft token that ends the turn
                return (yield from finish("stop"))
            context.append(token)
            written += 1
            if shown := scanner.feed(decoder.decode(model.piece(token))):
                yield shown
            if scanner.stopped:
                return "stop"
            if written >= max_tokens:
                return (yield from finish("length"))
        choice = choices[kept]
    return (yield from finish("stop"))
