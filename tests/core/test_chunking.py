from ragcore.knowledge.chunking import chunk_text


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


def test_short_paragraphs_are_packed_together_up_to_the_target():
    text = "\n\n".join(f"Paragraph number {i} is short." for i in range(10))
    chunks = chunk_text(text, target_chars=100)
    assert all(len(c.text) <= 100 for c in chunks)
    assert len(chunks) < 10
    assert " ".join(c.text.replace("\n\n", " ") for c in chunks) == text.replace("\n\n", " ")


def test_a_long_paragraph_is_cut_between_sentences():
    sentences = [f"Sentence {i} says something about the shop." for i in range(40)]
    chunks = chunk_text(" ".join(sentences), target_chars=200)
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk.text) <= 200
        assert chunk.text.startswith("Sentence ") and chunk.text.endswith("shop.")


def test_a_sentence_longer_than_the_target_is_cut_between_words():
    chunks = chunk_text("word " * 300, target_chars=100)
    assert all(0 < len(c.text) <= 100 for c in chunks)
    assert sum(c.text.count("word") for c in chunks) == 300


def test_text_without_words_gives_no_chunks():
    assert chunk_text("\n\n   \n") == []
