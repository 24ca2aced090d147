import itertools

from memory.chunking import ChunkingOptions, chunk_markdown
from memory.corpus import corpus_files

DOC = """# Pump Manual

Intro paragraph about the pump.

## Start-up

Open the suction valve.

### Checks

Check the oil level.

## Empty Section

## Shut-down

Close the discharge valve.

```
# not a heading inside a code fence
```
"""


def test_chunks_follow_headings_and_keep_title_section_path_and_source() -> None:
    chunks = chunk_markdown(DOC, source="test:manual.md", document="manual")
    assert [c.section for c in chunks] == ["Pump Manual", "Start-up", "Checks", "Shut-down"]
    assert [c.section_path for c in chunks] == [
        "Pump Manual",
        "Pump Manual > Start-up",
        "Pump Manual > Start-up > Checks",
        "Pump Manual > Shut-down",
    ]
    assert all(c.title == "Pump Manual" and c.source == "test:manual.md" and c.document == "manual" for c in chunks)
    assert [c.position for c in chunks] == [0, 1, 2, 3]
    assert "# not a heading inside a code fence" in chunks[-1].text
    assert chunks[2].embedding_text.startswith("Pump Manual > Start-up > Checks\n\n")


def test_chunk_ids_are_deterministic_and_depend_on_source_and_content() -> None:
    first = chunk_markdown(DOC, source="a.md", document="a")
    again = chunk_markdown(DOC, source="a.md", document="a")
    other_source = chunk_markdown(DOC, source="b.md", document="a")
    edited = chunk_markdown(
        DOC.replace("Check the oil level.", "Check the oil level twice."), source="a.md", document="a"
    )
    assert [c.id for c in first] == [c.id for c in again]
    assert not {c.id for c in first} & {c.id for c in other_source}
    assert {c.id for c in first} ^ {c.id for c in edited} == {first[2].id, edited[2].id}


def test_identical_sections_get_distinct_ids() -> None:
    text = "# T\n\n## Notes\n\nSame.\n\n## Notes\n\nSame.\n"
    chunks = chunk_markdown(text, source="s", document="d")
    assert len(chunks) == 2 and chunks[0].id != chunks[1].id


def test_long_sections_become_overlapping_windows_within_the_size_limit() -> None:
    sentences = [f"Sentence number {i} says something about bearings and seals." for i in range(60)]
    paragraphs = "\n\n".join(" ".join(sentences[i : i + 5]) for i in range(0, 60, 5))
    chunks = chunk_markdown(f"# T\n\n## Long\n\n{paragraphs}\n", source="s", document="d")
    options = ChunkingOptions()
    assert len(chunks) > 2
    assert all(len(c.text) <= options.max_chars for c in chunks)
    for before, after in itertools.pairwise(chunks):
        tail_sentence = before.text.rsplit(". ", 1)[-1]
        assert tail_sentence in after.text  # the seam is repeated
    assert all(f"Sentence number {i} " in "".join(c.text for c in chunks) for i in range(60))


def test_a_long_table_repeats_its_header_in_every_piece() -> None:
    rows = "\n".join(f"| PUMP-{i:03d} | {i * 1.5} mm/s | zone B |" for i in range(80))
    text = f"# T\n\n## Table\n\n| pump | vibration | zone |\n|---|---|---|\n{rows}\n"
    chunks = chunk_markdown(text, source="s", document="d")
    assert len(chunks) > 1
    assert all(c.text.startswith("| pump | vibration | zone |\n|---|---|---|") for c in chunks)


def test_plain_text_without_headings_is_one_section_named_after_the_document() -> None:
    chunks = chunk_markdown("Just a note.\n\nSecond paragraph.", source="s", document="note")
    assert [(c.title, c.section) for c in chunks] == [("note", "note")]


def test_a_document_of_only_headings_has_no_chunks() -> None:
    assert chunk_markdown("# Title\n\n## A\n\n## B\n", source="s", document="d") == []


def test_the_shipped_corpus_chunks_into_bounded_pieces() -> None:
    files = corpus_files()
    assert len(files) == 14
    for path in files:
        chunks = chunk_markdown(path.read_text(encoding="utf-8"), source=path.name, document=path.stem)
        assert chunks, path.name
        assert all(0 < len(c.text) <= 1000 for c in chunks), path.name
