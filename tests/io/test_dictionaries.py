"""FreeDict's dictionaries, in dictd's format, read into the real database and used by
POST /chat: a German question over English documents, answered offline."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from ragio.chat.dictionaries import keep_dictionaries, lookup
from tests.io.dictionaries import write_dictionary

ENTRIES = [
    "Adresse /adrˈɛsə/ <fem, n, sg>\naddress <n>\n see: {Adressen}\n\n",
    "einzeln /ˈaɪntsəln/ <adj>\nsingle <adj>, individual <adj>\n",
    "Server /sˈœɾvɜ/ <masc, n, sg>\nserver <n>, waiter <n>\n",
    "sperren /ʃpˈɛrən/ <v>\nblock <v>, bar <v>, lock sth. <v>\n"
    "   Synonyms: {blockieren}, {absperren}\n\n see: {sperrend}, {gesperrt}\n\n",
]


@pytest.fixture
def dictionaries(tmp_path: Path) -> Path:
    folder = tmp_path / "dictd"
    write_dictionary(folder, ENTRIES)
    return folder


@pytest.fixture
def settings_overrides(dictionaries: Path) -> dict[str, Any]:
    return {"dictionary_dir": str(dictionaries)}


ACCESS = """# Access control

To block a single address, add Require not ip 192.0.2.1 to the directory's section.

# Listening

The server listens on port 80 unless the Listen directive says otherwise.
"""
QUESTION = "Wie sperre ich eine einzelne Adresse?"


async def test_a_german_question_is_answered_offline_from_an_english_page(api, service):
    response = await api.post("/documents", json={"name": "access.md", "text": ACCESS})
    assert response.status_code == 201, response.text
    before = (await api.post("/chat", json={"question": QUESTION})).json()
    assert "block a single address" not in before["answer"]  # its German words find nothing

    await keep_dictionaries(service)
    body = (await api.post("/chat", json={"question": QUESTION})).json()

    assert body["answer"].startswith("To block a single address") and "[1]" in body["answer"]
    assert [c["document_name"] for c in body["citations"]] == ["access.md"]
    assert body["language"] == "de"


async def test_a_word_is_found_by_its_stem_and_one_that_is_english_already_is_kept(service):
    await keep_dictionaries(service)
    found = await service.database.run(lookup, "de", ["sperre", "einzelne", "server", "wie"])
    assert found["sperre"] == ("block", "bar")  # "sperren"'s entry, the first two
    assert found["einzelne"] == ("single", "individual")
    assert "wie" not in found  # a function word of German is not looked up


async def test_a_dictionary_is_read_again_when_it_changes_and_dropped_when_gone(
    service, dictionaries
):
    await keep_dictionaries(service)
    assert await service.database.run(lookup, "de", ["haus"]) == {}
    write_dictionary(dictionaries, [*ENTRIES, "Haus /haʊs/ <neut, n, sg>\nhouse <n>\n"])
    await keep_dictionaries(service)
    assert await service.database.run(lookup, "de", ["haus"]) == {"haus": ("house",)}

    for path in dictionaries.iterdir():
        path.unlink()
    await keep_dictionaries(service)
    assert await service.database.run(lookup, "de", ["sperre"]) == {}


async def test_a_broken_dictionary_is_logged_and_left_out(service, dictionaries, caplog):
    write_dictionary(dictionaries, ["Buch /buːx/\nbook\n"], code="fra")
    (dictionaries / "freedict-fra-eng.index").write_text("livre\tnot base 64!\n")
    with caplog.at_level(logging.WARNING, logger="ragio.chat.dictionaries"):
        await keep_dictionaries(service)
    assert "could not load the fr-English dictionary" in caplog.text
    assert str(dictionaries / "freedict-fra-eng.index") in caplog.text
    # the other language is in
    assert await service.database.run(lookup, "de", ["sperre"]) == {"sperre": ("block", "bar")}
