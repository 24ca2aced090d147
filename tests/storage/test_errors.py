"""Messages built from other messages read as whole sentences."""

import pytest

from core.errors import sentence


@pytest.mark.parametrize(
    ("inner", "joined"),
    [
        ("nothing was executed.", "failed: nothing was executed. Approve it again."),
        ("disk full", "failed: disk full. Approve it again."),
        ("is it running? ", "failed: is it running? Approve it again."),
        ("see the log…", "failed: see the log… Approve it again."),
    ],
)
def test_a_sentence_ends_in_exactly_one_stop_before_the_next_one(inner: str, joined: str) -> None:
    assert f"failed: {sentence(inner)} Approve it again." == joined
