import pytest

from ragcore.knowledge.chunking import chunk_text, count_tokens
from ragcore.knowledge.formats import PageWithTables, pdf_text


def test_chunks_follow_headings_and_remember_their_path():
    text = (
        "# Policies\n\n## Returns\n\nReturn within 30 days.\n\n## Shipping\n\nWe ship to the EU.\n"
    )
    chunks = chunk_text(text)
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Policies", "Returns"), "Return within 30 days."),
        (("Policies", "Shipping"), "We ship to the EU."),
    ]
    assert [c.position for c in chunks] == [0, 1]


def test_a_deeper_heading_nests_and_a_higher_one_closes_the_path():
    text = "# A\n\n## B\n\n### C\n\nin c\n\n## D\n\nin d\n\n# E\n\nin e"
    assert [c.heading_path for c in chunk_text(text)] == [("A", "B", "C"), ("A", "D"), ("E",)]


def test_tokens_are_counted_by_a_word_and_punctuation_rule():
    assert count_tokens("We ship to the EU.") == 6
    assert count_tokens("internationalization") == 4  # runs of up to five letters
    assert count_tokens("東京都") == 3  # one per ideograph
    assert count_tokens("  \n ") == 0


def test_short_paragraphs_are_packed_whole_up_to_the_target():
    paragraphs = [f"Paragraph number {i} is short." for i in range(10)]
    chunks = chunk_text("\n\n".join(paragraphs), target_tokens=20, overlap_tokens=0)
    assert all(count_tokens(c.text) <= 20 for c in chunks)
    assert 1 < len(chunks) < 10
    assert [p for c in chunks for p in c.text.split("\n\n")] == paragraphs


def test_each_chunk_starts_with_the_end_of_the_one_before():
    sentences = [f"Sentence {i} says something about the shop." for i in range(40)]
    chunks = chunk_text(" ".join(sentences), target_tokens=50, overlap_tokens=10)
    assert len(chunks) > 1
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert count_tokens(after.text) <= 50
        first_sentence = after.text.split(". ")[0] + "."
        assert before.text.endswith(first_sentence)
    assert all(any(s in c.text for c in chunks) for s in sentences)


def test_overlap_never_crosses_a_heading():
    text = "# One\n\n" + "First part words here. " * 30 + "\n\n# Two\n\nSecond part."
    chunks = chunk_text(text, target_tokens=40, overlap_tokens=10)
    assert chunks[-1].heading_path == ("Two",)
    assert chunks[-1].text == "Second part."


def test_a_long_paragraph_is_cut_between_sentences():
    sentences = [f"Sentence {i} says something about the shop." for i in range(40)]
    chunks = chunk_text(" ".join(sentences), target_tokens=50, overlap_tokens=0)
    assert len(chunks) > 1
    for chunk in chunks:
        assert count_tokens(chunk.text) <= 50
        assert chunk.text.startswith("Sentence ") and chunk.text.endswith("shop.")
    assert " ".join(c.text for c in chunks) == " ".join(sentences)


def test_a_sentence_longer_than_the_target_is_cut_between_words():
    chunks = chunk_text("word " * 300, target_tokens=25, overlap_tokens=0)
    assert all(0 < count_tokens(c.text) <= 25 for c in chunks)
    assert sum(c.text.count("word") for c in chunks) == 300


def test_a_word_longer_than_the_target_is_cut_too():
    blob = "QUJD" * 500
    chunks = chunk_text(f"Key: {blob}", target_tokens=30, overlap_tokens=0)
    assert all(count_tokens(c.text) <= 30 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == f"Key:{blob}"


def test_text_written_without_spaces_is_cut_and_rejoined_without_adding_any():
    text = "今日は晴れです。明日は雨です。" * 20
    chunks = chunk_text(text, target_tokens=30, overlap_tokens=0)
    assert len(chunks) > 1
    assert "".join(c.text for c in chunks) == text
    assert all(" " not in c.text for c in chunks)


def test_text_without_words_gives_no_chunks():
    assert chunk_text("\n\n   \n") == []
    assert chunk_text("# Heading only\n\n---\n") == []


@pytest.mark.parametrize("target", [1, 3, 7, 64])
def test_no_chunk_is_over_the_target_whatever_the_text(target):
    text = "# T\n\nA fairly long sentence, with commas; and more words! " * 20 + "x" * 300
    for chunk in chunk_text(text, target_tokens=target, overlap_tokens=target // 2):
        assert 0 < count_tokens(chunk.text) <= target


def test_a_code_block_keeps_its_lines_and_its_comments_are_no_headings():
    text = (
        "# Install\n\nRun this:\n\n```sh\n# update the lists first\napt-get update\n\n"
        "apt-get install foo\n```\n\nThat is all."
    )
    [chunk] = chunk_text(text)
    assert chunk.heading_path == ("Install",)
    assert chunk.text == (
        "Run this:\n\n```\n# update the lists first\napt-get update\n\napt-get install foo\n```"
        "\n\nThat is all."
    )


def test_a_long_code_block_is_cut_between_lines_each_piece_a_code_block():
    lines = [f"Require ip 10.0.{n}.0/24 # office {n}" for n in range(40)]
    text = "Allowed:\n\n```\n" + "\n".join(lines) + "\n```\n"
    chunks = chunk_text(text, target_tokens=60, overlap_tokens=10)
    assert len(chunks) > 2
    code = [piece for c in chunks for piece in c.text.split("\n\n") if piece.startswith("```")]
    assert all(p.startswith("```\n") and p.endswith("\n```") for p in code)
    kept = [line for p in code for line in p.split("\n")[1:-1]]
    assert list(dict.fromkeys(kept)) == lines  # every line, whole, in order
    assert all(count_tokens(c.text) <= 60 for c in chunks)


MENU_HEADER = "| Dish | Size | Price |\n| --- | --- | --- |"


def test_a_table_over_several_chunks_repeats_its_header_in_each_and_never_splits_a_row():
    sizes = [("large" if n % 2 else "small", f"{n + 8}.50 EUR") for n in range(40)]
    rows = [f"| Pizza {n} | {size} | {price} |" for n, (size, price) in enumerate(sizes)]
    text = "# Menu\n\nBaked to order.\n\n" + MENU_HEADER + "\n" + "\n".join(rows) + "\n\nCash only."
    chunks = chunk_text(text, target_tokens=60, overlap_tokens=10)
    named = [
        f"Dish: Pizza {n}; Size: {size}; Price: {price}" for n, (size, price) in enumerate(sizes)
    ]
    holding_rows = [c for c in chunks if "Pizza" in c.text]
    assert len(holding_rows) > 3
    for chunk in holding_rows:
        table = [line for line in chunk.text.split("\n") if "Pizza" in line]
        assert table and set(table) <= set(named)  # whole rows, each with the column names
        assert chunk.heading_path == ("Menu",)
        assert count_tokens(chunk.text) <= 60
    shown = [line for c in holding_rows for line in c.text.split("\n") if "Pizza" in line]
    assert shown == named  # each row once (no overlap repeats a row), in order
    assert holding_rows[0].text.startswith("Baked to order.\n\nDish: Pizza 0; Size: small")
    assert chunks[-1].text.endswith("Cash only.")


def test_a_row_longer_than_a_chunk_is_cut_between_words():
    text = (
        MENU_HEADER + "\n| Pizza | large | 14 EUR |\n| Calzone | " + "ham cheese " * 30 + "| 12 |"
    )
    chunks = chunk_text(text, target_tokens=40, overlap_tokens=5)
    assert len(chunks) > 2
    assert all(count_tokens(c.text) <= 40 for c in chunks)
    assert chunks[0].text.startswith("Dish: Pizza; Size: large; Price: 14 EUR\nDish: Calzone")
    words = " ".join(c.text for c in chunks).split()
    assert words[-2:] == ["Price:", "12"] and words.count("ham") == 30


def test_a_table_without_a_header_row_joins_each_rows_cells():
    rows = [f"| {n} | item number {n} | spare |" for n in range(30)]
    chunks = chunk_text("\n".join(rows), target_tokens=30, overlap_tokens=5)
    assert len(chunks) > 2
    lines = [line for c in chunks for line in c.text.split("\n")]
    assert lines == [f"{n} | item number {n} | spare" for n in range(30)]  # each row once


def test_a_bar_escaped_in_a_cell_stays_in_the_cell():
    [chunk] = chunk_text("| Key | Means |\n|:--|--:|\n| a \\| b | either |")
    assert chunk.text == "Key: a | b; Means: either"


def test_a_pdf_page_with_tables_keeps_its_text_around_them_and_the_rows_as_a_table():
    page = PageWithTables(
        ("Menu\n# not a heading", (("Dish", "Price"), ("Pizza", "14.50")), "| not a row")
    )
    text = pdf_text([page, "Second page."])
    assert "| Dish | Price |\n| --- | --- |\n| Pizza | 14.50 |" in text
    assert "\\# not a heading" in text and "\\| not a row" in text  # the rest escaped
    assert text.index("# Page 2") > text.index("Pizza")
    [chunk] = chunk_text(text.split("# Page 2")[0])
    assert "Dish: Pizza; Price: 14.50" in chunk.text
