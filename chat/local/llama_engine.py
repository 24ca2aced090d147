"""The boundary to llama.cpp (``llama-cpp-python``, the ``local`` extra): blocking completions and the routing score.

`CompletionEngine` is what `chat.local.service.LocalChatCompletion` needs from an inference library;
`LlamaEngine` implements it over ``llama_cpp.Llama`` (tests use a scripted engine). ``llama_cpp`` is imported
only when a model loads, so everything else works without the extra. The engine restores the shared prompt
prefix saved beside the model (`prompt_cache`) when it loads, and saves it after the first prompt it reads.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from semantic_kernel.exceptions import ServiceResponseException

from chat.local.lookup_decoding import Hints, greedy_decode
from chat.local.prompt_cache import PromptCache, covered, worth_saving
from kernel_setup.shaping import FENCE_WORD

__all__ = [
    "TOOL_START_PIECES",
    "CompletionEngine",
    "LlamaEngine",
    "llama_available",
    "load_engine",
    "measure_rates",
]

# First-token pieces that open a call as Qwen2.5-Coder writes it (``<tool_call>`` as text, bare JSON or a fence).
TOOL_START_PIECES = ("<", "{", "```")


class CompletionEngine(Protocol):
    """The boundary to the inference library: blocking calls, run in a worker thread."""

    context_size: int

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in the model's vocabulary (special tokens parsed)."""
        ...

    def complete(
        self,
        prompt: str,
        *,
        grammar: str | None,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stop: Sequence[str],
        grammar_tokens: int | None = None,
        hints: Sequence[str] = (),
    ) -> Iterator[str]:
        """Yield the generated text piece by piece (blocking).

        With ``grammar_tokens``, ``grammar`` constrains only that many opening tokens and the rest is
        generated freely (grammar sampling costs about a third of the generation speed). ``hints``: texts
        of the form being written, for drafting greedy text (`lookup_decoding.Hints`); they never change it.
        """
        ...


def llama_available() -> bool:
    """Whether the optional ``llama_cpp`` package can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


_GRAMMAR_CACHE = 16


class LlamaEngine:
    """`CompletionEngine` over ``llama_cpp.Llama``; the model loads on first use, in the calling (worker) thread."""

    def __init__(self, path: Path, *, threads: int, context_size: int) -> None:
        self.path = path
        self.threads = threads
        self.context_size = context_size
        self._llama: Any = None
        self._grammars: dict[str, Any] = {}
        self._tool_start_ids: Any = None
        self._lock = threading.Lock()
        self._cache: PromptCache | None = None
        self._restored: list[int] = []
        self._persisted = False
        self.lookup_drafts = True  # greedy text without a grammar: prompt-lookup drafts (`lookup_decoding`)

    def _model(self) -> Any:
        if self._llama is None:
            import llama_cpp  # the optional extra; imported only here

            if not self.path.is_file():
                raise ServiceResponseException(
                    f"The local model file {str(self.path)!r} does not exist. Install it with `pumpops model install`."
                )
            self._llama = llama_cpp.Llama(
                model_path=str(self.path),
                n_ctx=self.context_size,
                n_threads=self.threads,
                n_batch=512,
                verbose=False,
            )
            self._cache = PromptCache.beside(self.path, self.context_size, llama_cpp.__version__)
            self._restore(self._llama, self._cache)
        return self._llama

    def _restore(self, llama: Any, cache: PromptCache) -> None:
        """Load the saved prompt prefix into the fresh context (`prompt_cache`); nothing when there is none."""
        import llama_cpp

        saved = cache.load()
        if saved is None or not saved[0] or len(saved[0]) >= self.context_size:
            return
        ids, kv = saved
        buffer = (ctypes.c_uint8 * len(kv)).from_buffer_copy(kv)
        if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(kv), 0) == 0:
            return  # refused by llama.cpp (another layout): the prompt is read as usual
        llama.input_ids[: len(ids)] = ids
        llama.n_tokens = len(ids)
        self._restored = ids

    def _persist_once(self, llama: Any, prompt: str, tokens: Sequence[int]) -> None:
        """After the first prompt a process evaluates: save its part before the first fence line.

        That part (the tool list and the fixed system text) is what every conversation shares; the
        fence marker and what follows are per service or per turn, never written to disk, and are read
        again by the next call. Nothing is saved when the restored prefix already covered it.
        """
        if self._persisted or self._cache is None:
            return
        self._persisted = True
        cut = prompt.find(f"<<{FENCE_WORD}")
        if cut >= 0:
            head = llama.tokenize(prompt[:cut].encode("utf-8"), add_bos=False, special=True)
            tokens = tokens[: covered(head, tokens)]
        kept = min(len(tokens), llama.n_tokens)
        if not worth_saving(self._restored, tokens[:kept]):
            return
        import llama_cpp

        if kept < llama.n_tokens:
            llama._ctx.kv_cache_seq_rm(-1, kept, -1)
            llama.n_tokens = kept
        context = llama._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(context, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(context, buffer, size, 0)
        self._cache.save(llama.input_ids[:kept].tolist(), bytes(buffer)[:written])

    def _grammar(self, text: str) -> Any:
        grammar = self._grammars.pop(text, None)
        if grammar is None:
            import llama_cpp

            grammar = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
            while len(self._grammars) >= _GRAMMAR_CACHE:  # call grammars vary per conversation: keep the latest
                del self._grammars[next(iter(self._grammars))]
        self._grammars[text] = grammar  # most recently used last
        return grammar

    def _fitting_tokens(self, llama: Any, prompt: str, *, reserve: int) -> list[int]:
        """The prompt's tokens, refused when they and ``reserve`` more exceed the context."""
        tokens: list[int] = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        needed = len(tokens) + reserve
        if needed > self.context_size:
            raise ServiceResponseException(
                f"The conversation needs about {needed} tokens, more than LocalModel.ContextSize "
                f"({self.context_size}). Start a new session or raise LocalModel.ContextSize."
            )
        return tokens

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (special tokens parsed, no BOS)."""
        with self._lock:
            return len(self._model().tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def tool_start_logprob(self, prompt: str) -> float:
        """Log-probability that the turn after ``prompt`` opens like a call; evaluates only the uncached suffix."""
        import numpy as np

        with self._lock:
            llama = self._model()
            if self._tool_start_ids is None:
                ids = [t for t in llama.tokenize(b"<tool_call>", add_bos=False, special=True)][:1]
                for token in range(llama.n_vocab()):
                    piece = llama.detokenize([token]).decode("utf-8", errors="ignore")  # special tokens: empty
                    if piece.startswith(TOOL_START_PIECES):
                        ids.append(token)
                self._tool_start_ids = np.array(ids)
            tokens = self._fitting_tokens(llama, prompt, reserve=1)  # the next token's position too
            _read(llama, tokens)
            logits = _logits(llama, 1)[0].astype(np.float64)
            self._persist_once(llama, prompt, tokens)
            top = logits.max()
            total = np.log(np.exp(logits - top).sum())
            chosen = np.log(np.exp(logits[self._tool_start_ids] - top).sum())
            return float(chosen - total)

    def complete(
        self,
        prompt: str,
        *,
        grammar: str | None,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stop: Sequence[str],
        grammar_tokens: int | None = None,
        hints: Sequence[str] = (),
    ) -> Iterator[str]:
        """Stream a completion; holds the model lock until the generator is exhausted or closed."""
        with self._lock:
            llama = self._model()
            tokens = self._fitting_tokens(llama, prompt, reserve=max_tokens)
            options = {"temperature": temperature, "seed": seed, "stop": list(stop)}
            if not grammar:
                yield from self._free(llama, prompt, tokens, max_tokens, options, hints)
            elif not grammar_tokens or grammar_tokens >= max_tokens:
                yield from self._stream(llama, prompt, max_tokens, self._grammar(grammar), options)
            else:
                # The constrained opening, then (unless it already ended) the rest without the grammar,
                # continuing from the cached prompt plus the opening.
                opening: list[str] = []
                finish = yield from self._stream(
                    llama, prompt, grammar_tokens, self._grammar(grammar), options, opening
                )
                if finish == "length":
                    rest = prompt + "".join(opening)
                    yield from self._free(llama, rest, None, max_tokens - grammar_tokens, options)
            self._persist_once(llama, prompt, tokens)

    def _free(
        self,
        llama: Any,
        prompt: str,
        tokens: list[int] | None,
        max_tokens: int,
        options: Mapping[str, Any],
        hints: Sequence[str] = (),
    ) -> Generator[str, None, str | None]:
        """Text without a grammar: greedy with prompt-lookup drafts at temperature 0, else llama.cpp's sampler.

        ``tokens``: the prompt's, when already known (the drafts need them; the sampler tokenizes by itself).
        """
        if not self.lookup_drafts or options["temperature"] > 0:
            return (yield from self._stream(llama, prompt, max_tokens, None, options))
        if tokens is None:
            tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        known = Hints([llama.tokenize(hint.encode("utf-8"), add_bos=False, special=True) for hint in hints])
        try:
            drafts = _LlamaDrafts(llama)
            return (yield from greedy_decode(drafts, tokens, max_tokens=max_tokens, stop=options["stop"], hints=known))
        finally:
            llama._requires_eval = True  # the last logits may be a rejected draft's: never sample from them

    @staticmethod
    def _stream(
        llama: Any,
        prompt: str,
        max_tokens: int,
        grammar: Any,
        options: Mapping[str, Any],
        into: list[str] | None = None,
    ) -> Generator[str, None, str | None]:
        """Yield one completion's text pieces; return its finish reason."""
        stream = llama.create_completion(prompt, max_tokens=max_tokens, grammar=grammar, stream=True, **options)
        finish: str | None = None
        try:
            for chunk in stream:
                choice = chunk["choices"][0]
                finish = choice.get("finish_reason") or finish
                if choice["text"]:
                    if into is not None:
                        into.append(choice["text"])
                    yield choice["text"]
        finally:
            stream.close()
        return finish


class _LlamaDrafts:
    """`lookup_decoding.DraftModel` over ``llama_cpp.Llama``'s context: batches with a greedy choice per token."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self._vocab = llama._model.vocab

    def prefill(self, tokens: Sequence[int]) -> int:
        _read(self._llama, tokens)
        return self._choices(1)[0]

    def verify(self, tokens: Sequence[int]) -> list[int]:
        llama = self._llama
        start = llama.n_tokens
        llama._ctx.kv_cache_seq_rm(-1, start, -1)
        llama._batch.set_batch(batch=list(tokens), n_past=start, logits_all=True)
        llama._ctx.decode(llama._batch)
        llama.input_ids[start : start + len(tokens)] = tokens
        llama.n_tokens = start + len(tokens)
        return self._choices(len(tokens))

    def rollback(self, keep: int) -> None:
        self._llama.n_tokens = keep
        self._llama._ctx.kv_cache_seq_rm(-1, keep, -1)

    def context_length(self) -> int:
        return int(self._llama.n_tokens)

    def is_end(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def piece(self, token: int) -> bytes:
        return bytes(self._llama.detokenize([token], special=False))

    def _choices(self, rows: int) -> list[int]:
        return [int(t) for t in _logits(self._llama, rows).argmax(axis=1)]


def _read(llama: Any, tokens: Sequence[int]) -> None:
    """Make ``tokens`` the context: keep the cached prefix they share, evaluate the rest (at least the last one)."""
    llama.n_tokens = min(covered(llama._input_ids.tolist(), tokens), len(tokens) - 1)
    llama.eval(tokens[llama.n_tokens :])


def _logits(llama: Any, rows: int) -> Any:
    """The logits of the last evaluation's ``rows`` outputs, as a (rows, vocabulary) array over llama.cpp's buffer."""
    import numpy as np

    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(rows, llama.n_vocab()))


RATES_SENTENCE = "Pump PUMP-007 at Station-C reports vibration 9.4 mm/s, flow 1650 m³/h and 81 °C. "


def measure_rates(path: Path, threads: int, *, repeats: int = 30, written: int = 80) -> tuple[float, float]:
    """llama.cpp's raw prompt-reading and writing rates (tokens/s) for the model at ``path`` on this machine now.

    In a context of its own (the weights are shared through mmap; no engine's cached prompt is touched): a prompt of
    ``repeats`` copies of a fixed sentence read in one go, then up to ``written`` greedy tokens after it. How fast
    the machine was when a latency was measured (`pumpops eval`, `bench/local_model_bench.py`).
    """
    import llama_cpp

    llama = llama_cpp.Llama(model_path=str(path), n_ctx=2048, n_threads=threads, n_batch=512, verbose=False)
    prompt = (
        f"<|im_start|>user\n{RATES_SENTENCE * repeats}\nDescribe the pump at length.<|im_end|>\n<|im_start|>assistant\n"
    )
    tokens = llama.tokenize(prompt.encode(), add_bos=False, special=True)
    started = time.perf_counter()
    llama.eval(tokens)
    read = len(tokens) / (time.perf_counter() - started)
    generated, first = 0, 0.0
    for _ in llama.create_completion(prompt, max_tokens=written, temperature=0.0, stream=True):
        generated += 1
        if generated == 1:  # the first token only samples from the logits already read
            first = time.perf_counter()
    write = (generated - 1) / (time.perf_counter() - first) if generated > 1 else 0.0
    return read, write


@functools.lru_cache(maxsize=1)
def load_engine(path: Path, threads: int, context_size: int) -> LlamaEngine:
    """The engine for one model file; cached so every runner of a process shares the loaded weights."""
    return LlamaEngine(path, threads=threads, context_size=context_size)
