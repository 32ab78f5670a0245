"""Replies cut to the platforms' limits, and the answer's sources listed under it."""

from __future__ import annotations

import pytest

from ragcore.channels.replies import (
    DISCORD_LIMIT,
    SHORTENED,
    TELEGRAM_LIMIT,
    WHATSAPP_LIMIT,
    render_reply,
    split_text,
    units,
)
from ragcore.chat.citations import Citation


def citation(number: int, name: str, *headings: str) -> Citation:
    return Citation(number, number, name, 100 + number, "snippet", 0.5, tuple(headings))


def sentences(count: int, words: int = 12) -> str:
    return " ".join(f"Sentence {i} " + " ".join(["word"] * words) + "." for i in range(count))


@pytest.mark.parametrize("limit", [TELEGRAM_LIMIT, WHATSAPP_LIMIT, DISCORD_LIMIT])
def test_a_long_reply_is_cut_on_sentence_ends_within_the_limit(limit):
    text = sentences(150)  # about 11,500 characters: under ten parts even for WhatsApp
    parts = split_text(text, limit)
    assert len(parts) > 1
    assert all(units(p) <= limit for p in parts)
    assert all(p.endswith(".") for p in parts)  # never mid-sentence
    assert " ".join(parts) == text  # nothing lost or reordered


def test_a_short_reply_is_one_part_unchanged():
    assert split_text("  We open at 9 am [1].  ", 4096) == ["We open at 9 am [1]."]


def test_paragraphs_and_lines_are_preferred_to_sentences():
    first = sentences(5)
    text = first + "\n\n" + sentences(5)
    parts = split_text(text, units(first) + 40)
    assert parts[0] == first


def test_emoji_count_as_two_units_as_the_platforms_count_them():
    text = "😀" * 3000  # 6000 UTF-16 units, no boundary anywhere
    parts = split_text(text, DISCORD_LIMIT)
    assert all(units(p) <= DISCORD_LIMIT for p in parts)
    assert "".join(parts) == text


def test_a_word_longer_than_the_limit_is_cut_hard():
    text = "x" * 5000
    parts = split_text(text, TELEGRAM_LIMIT)
    assert [len(p) for p in parts] == [4096, 904]


def test_a_flood_is_shortened_to_at_most_ten_parts():
    parts = split_text(sentences(2000), WHATSAPP_LIMIT)
    assert len(parts) == 10
    assert parts[-1].endswith(SHORTENED)
    assert all(units(p) <= WHATSAPP_LIMIT for p in parts)


def test_sources_are_listed_by_number_with_their_heading():
    parts = render_reply(
        "Returns take 30 days [1]. We ship in 3 days [2].",
        [citation(2, "shipping.md"), citation(1, "refunds.md", "Policies", "Returns")],
        TELEGRAM_LIMIT,
    )
    assert parts == [
        "Returns take 30 days [1]. We ship in 3 days [2].\n\n"
        "Sources:\n[1] refunds.md › Returns\n[2] shipping.md"
    ]


def test_no_sources_no_list():
    assert render_reply("The documents do not answer this.", [], DISCORD_LIMIT) == [
        "The documents do not answer this."
    ]


def test_the_source_list_stays_together_after_a_long_answer():
    answer = sentences(60)
    parts = render_reply(answer, [citation(1, "faq.md")], WHATSAPP_LIMIT)
    assert len(parts) > 1 and parts[-1].endswith(".\n\nSources:\n[1] faq.md")
    assert all(units(p) <= WHATSAPP_LIMIT for p in parts)


def test_a_long_source_name_is_shortened():
    [part] = render_reply("Yes [1].", [citation(1, "a" * 300 + ".md")], TELEGRAM_LIMIT)
    assert len(part.splitlines()[-1]) == 100
