"""Greedy decoding with prompt-lookup drafts: the tokens of plain greedy decoding, in fewer model steps."""

from collections.abc import Callable, Sequence

import pytest

from chat.local.lookup_decoding import Hints, StopScanner, draft_tokens, greedy_decode

END = 0


class Scripted:
    """A model whose greedy choice after a context is ``rule(context)``; counts the batches it reads."""

    def __init__(self, rule: Callable[[list[int]], int], pieces: dict[int, bytes]) -> None:
        self.rule = rule
        self.pieces = pieces
        self.context: list[int] = []
        self.batches: list[int] = []

    def prefill(self, tokens: Sequence[int]) -> int:
        self.context = list(tokens)
        return self.rule(self.context)

    def verify(self, tokens: Sequence[int]) -> list[int]:
        self.batches.append(len(tokens))
        choices = []
        for token in tokens:
            self.context.append(token)
            choices.append(self.rule(self.context))
        return choices

    def rollback(self, keep: int) -> None:
        del self.context[keep:]

    def context_length(self) -> int:
        return len(self.context)

    def is_end(self, token: int) -> bool:
        return token == END

    def piece(self, token: int) -> bytes:
        return self.pieces[token]


def copying(answer: list[int]) -> Callable[[list[int]], int]:
    """Greedy choice: the next token of ``answer`` after the prompt (which ends with the marker 99), then END."""

    def rule(context: list[int]) -> int:
        written = len(context) - context.index(99) - 1
        return answer[written] if written < len(answer) else END

    return rule


PIECES = {n: f"<{n}>".encode() for n in range(1, 100)} | {END: b""}


def plain(model: Scripted, prompt: list[int], limit: int) -> list[int]:
    context, out = list(prompt), list[int]()
    while len(out) < limit and (token := model.rule(context)) != END:
        context.append(token)
        out.append(token)
    return out


def test_copied_spans_are_taken_in_batches_and_the_text_is_plain_greedys() -> None:
    prompt = [5, 6, 7, 8, 9, 10, 11, 12, 40, 41, 99]
    answer = [30, 5, 6, 7, 8, 9, 10, 11, 12, 31]  # copies a span of the prompt
    model = Scripted(copying(answer), PIECES)
    text = "".join(greedy_decode(model, prompt, max_tokens=50, stop=[]))
    assert text == "".join(f"<{t}>" for t in plain(model, prompt, 50))
    assert len(model.batches) < len(answer)  # fewer model steps than tokens
    assert model.context == prompt + answer  # nothing of a rejected draft is left


def test_a_wrong_draft_costs_a_batch_but_changes_no_token() -> None:
    prompt = [5, 6, 7, 8, 1, 2, 3, 99]
    answer = [5, 6, 7, 20, 21, 1, 2, 3, 22]  # "5 6 7" then not 8; "1 2 3" then not what followed it
    model = Scripted(copying(answer), PIECES)
    assert "".join(greedy_decode(model, prompt, max_tokens=50, stop=[])) == "".join(f"<{t}>" for t in answer)
    assert max(model.batches) > 1  # drafts were read, and rejected
    assert model.context == prompt + answer


@pytest.mark.parametrize("limit", [1, 3, 4, 7])
def test_max_tokens_is_exact_even_inside_an_accepted_draft(limit: int) -> None:
    prompt = [5, 6, 7, 8, 9, 10, 11, 12, 99]
    answer = [5, 6, 7, 8, 9, 10, 11, 12]
    model = Scripted(copying(answer), PIECES)
    pieces = greedy_decode(model, prompt, max_tokens=limit, stop=[])
    text = ""
    while True:
        try:
            text += next(pieces)
        except StopIteration as done:
            finish = done.value
            break
    assert text == "".join(f"<{t}>" for t in answer[:limit]) and finish == "length"
    if limit == 1:
        assert model.batches == []


def test_a_stop_string_split_across_tokens_ends_the_text_before_it() -> None:
    pieces = {1: b"PUMP-00", 2: b"7 ok<to", 3: b"ols> more", END: b""}
    model = Scripted(copying([1, 2, 3]), pieces)
    assert "".join(greedy_decode(model, [99], max_tokens=10, stop=["<tools>"])) == "PUMP-007 ok"


def test_utf8_split_across_tokens_comes_out_whole() -> None:
    degree = "°".encode()
    pieces = {1: b"81 " + degree[:1], 2: degree[1:] + b"C", END: b""}
    model = Scripted(copying([1, 2]), pieces)
    assert "".join(greedy_decode(model, [99], max_tokens=10, stop=[])) == "81 °C"


def test_drafts_follow_the_latest_earlier_match_of_the_last_three_or_four_tokens() -> None:
    assert draft_tokens([1, 2, 3, 4, 9, 9, 1, 2, 3, 5, 6, 7, 1, 2, 3]) == [5, 6, 7]  # the latest match
    assert draft_tokens([1, 2, 3, 4, 5, 1, 2, 3], length=1) == [4]
    assert draft_tokens([1, 2, 8, 1, 2]) == []  # two tokens alone are too weak a match
    assert draft_tokens([1, 2, 3], length=0) == [] and draft_tokens([]) == []


def test_hints_draft_only_what_every_matching_continuation_agrees_on() -> None:
    hints = Hints([[1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 8, 5, 6], [9, 3, 4, 5, 6, 7, 10]])
    assert hints.draft([0, 1, 2, 3]) == []  # 4 or 8 next: no agreement, no draft
    assert hints.draft([2, 3, 4]) == [5, 6, 7]  # "2 3 4" continues one way, up to DRAFT_LENGTH
    assert hints.draft([2, 3, 4], length=2) == [5, 6]
    assert hints.draft([9, 3, 4]) == [5, 6, 7]
    assert hints.draft([0, 5, 6]) == [7]  # "5 6" ends one hint (which says nothing) and goes on to 7 in others
    assert hints.draft([0, 0, 8]) == [5, 6]  # one token is a tail too
    assert hints.draft([42, 43]) == [] and not Hints() and hints


def test_hinted_drafts_are_read_first_and_the_text_stays_plain_greedys() -> None:
    prompt = [40, 41, 99]
    answer = [1, 2, 3, 4, 5, 6, 7, 11]  # nothing of it is in the prompt: only the hints know it
    unhinted = Scripted(copying(answer), PIECES)
    assert "".join(greedy_decode(unhinted, prompt, max_tokens=50, stop=[])) == "".join(f"<{t}>" for t in answer)
    hinted = Scripted(copying(answer), PIECES)
    # A hint that is wrong after "5 6" (12, not 7) costs a rejected draft and changes no token.
    known = Hints([[1, 2, 3, 4, 5, 6, 12]])
    text = "".join(greedy_decode(hinted, prompt, max_tokens=50, stop=[], hints=known))
    assert text == "".join(f"<{t}>" for t in answer)
    assert len(hinted.batches) < len(unhinted.batches) == len(answer)
    assert hinted.context == prompt + answer


def test_the_stop_scanner_holds_back_only_what_may_begin_a_stop() -> None:
    scanner = StopScanner(["<tools>", "<|im_end|>"])
    assert scanner.feed("value <") == "value "
    assert scanner.feed("b>") == "<b>"
    assert scanner.feed(" end <tool") == " end "
    assert scanner.feed("s> after") == "" and scanner.stopped
    assert scanner.flush() == ""
    open_end = StopScanner(["<tools>"])
    assert open_end.feed("a <to") == "a " and open_end.flush() == "<to"
