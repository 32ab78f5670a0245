import pytest

from ragcore.effects import Embed, FindDocument, StoreDocument
from ragcore.errors import InvalidInput
from ragcore.knowledge.documents import StoredDocument, add_document, content_hash
from tests.core.drive import drive


def test_a_new_document_is_chunked_embedded_and_stored():
    def answer(effect):
        match effect:
            case FindDocument():
                return None
            case Embed(texts=texts):
                return [[float(i)] for i in range(len(texts))]
            case StoreDocument():
                return StoredDocument(7, effect.name, len(effect.chunks), created=True)

    outcome, effects = drive(add_document(" faq.md ", "# FAQ\n\nWe open at 9."), answer)
    find, embed, store = effects
    assert find.content_hash == content_hash("# FAQ\n\nWe open at 9.")
    assert embed.texts == ("We open at 9.",) and embed.purpose == "document"
    assert store.name == "faq.md"
    assert store.vectors == ((0.0,),)
    assert store.chunks[0].heading_path == ("FAQ",)
    assert outcome == StoredDocument(7, "faq.md", 1, created=True)


def test_a_duplicate_is_neither_embedded_nor_stored_again():
    existing = StoredDocument(3, "faq.md", 1, created=False)
    outcome, effects = drive(add_document("copy.md", "We open at 9."), lambda e: existing)
    assert [type(e) for e in effects] == [FindDocument]
    assert outcome is existing


def test_line_endings_and_trailing_space_do_not_make_a_new_document():
    assert content_hash("a\r\nb  \n\n") == content_hash("a\nb")
    assert content_hash("a b") != content_hash("a  b")


@pytest.mark.parametrize(
    ("name", "text", "field"),
    [
        ("", "text", "name"),
        ("x" * 256, "text", "name"),
        ("a.md", None, "text"),
        ("a.md", " \n--\n ", "text"),
    ],
)
def test_bad_documents_are_refused_before_any_effect(name, text, field):
    with pytest.raises(InvalidInput) as raised:
        next(add_document(name, text))
    assert raised.value.field == field
