import pytest

from ragcore.errors import InvalidInput
from ragcore.knowledge.documents import (
    EMBED_BATCH,
    DeleteDocuments,
    FindDocuments,
    FindNamed,
    NameTaken,
    StoredDocument,
    StoreDocuments,
    add_document,
    content_hash,
    forget_documents,
    prepare_document,
    store_new_documents,
)
from ragcore.knowledge.effects import Embed
from ragcore.knowledge.graph import TeachGraph
from tests.core.drive import drive


def recorded(effect):
    match effect:
        case FindDocuments(content_hashes=digests):
            return [None] * len(digests)
        case FindNamed(names=names):
            return [[] for _ in names]
        case Embed(texts=texts):
            return [[float(len(text))] for text in texts]
        case StoreDocuments(documents=docs):
            return [StoredDocument(7, d.name, len(d.chunks), created=True) for d in docs]


def stored_one(effects):
    [store] = [e for e in effects if isinstance(e, StoreDocuments)]
    [doc] = store.documents
    return doc


def test_a_new_document_is_chunked_embedded_and_stored():
    outcome, effects = drive(add_document(" faq.md ", "# FAQ\n\nWe open at 9."), recorded)
    find, named, embed, stores, taught = effects
    [store] = stores.documents
    assert taught == TeachGraph((7,), ())  # the graph learns it once it is stored
    assert find.content_hashes == (content_hash("# FAQ\n\nWe open at 9."),)
    assert named.names == ("faq.md",)
    assert store.replaces == ()
    assert embed.texts == ("We open at 9.",) and embed.purpose == "document"
    assert store.name == "faq.md"
    assert store.vectors == ((13.0,),)
    assert store.chunks[0].heading_path == ("FAQ",)
    assert (store.content_type, store.size_bytes) == ("text/markdown", 20)
    assert outcome == StoredDocument(7, "faq.md", 1, created=True)


def test_the_file_a_document_came_from_is_stored_with_it():
    pipeline = add_document("r.pdf", "Text.", content_type="application/pdf", size_bytes=9000)
    _, effects = drive(pipeline, recorded)
    store = stored_one(effects)
    assert (store.content_type, store.size_bytes) == ("application/pdf", 9000)


def test_a_long_document_is_embedded_in_batches_and_stored_once():
    text = "\n\n".join(f"# Part {i}\n\nThe answer to part {i}." for i in range(EMBED_BATCH * 2 + 5))
    _, effects = drive(add_document("long.md", text), recorded)
    embeds = [e for e in effects if isinstance(e, Embed)]
    assert [len(e.texts) for e in embeds] == [EMBED_BATCH, EMBED_BATCH, 5]
    store = stored_one(effects)
    assert len(store.chunks) == len(store.vectors) == EMBED_BATCH * 2 + 5
    assert store.vectors[-1] == (float(len(store.chunks[-1].text)),)


def test_a_text_repeated_across_documents_is_embedded_once_and_stored_with_each():
    footer = "Contact us at help@example.com."
    docs = [
        prepare_document(f"page-{i}.md", f"# Page {i}\n\nPart {i}.\n\n# Footer\n\n{footer}")
        for i in range(3)
    ]
    _, effects = drive(store_new_documents(docs), recorded)
    [embed] = [e for e in effects if isinstance(e, Embed)]
    assert embed.texts == ("Part 0.", footer, "Part 1.", "Part 2.")
    [store] = [e for e in effects if isinstance(e, StoreDocuments)]
    for doc in store.documents:
        assert [c.text for c in doc.chunks][-1] == footer
        assert doc.vectors[-1] == (float(len(footer)),)
        assert doc.vectors[0] == (7.0,)


def test_an_embedding_failure_midway_stores_nothing():
    text = "\n\n".join(f"# Part {i}\n\nThe answer to part {i}." for i in range(EMBED_BATCH + 1))
    pipeline = add_document("long.md", text)
    assert isinstance(next(pipeline), FindDocuments)
    assert isinstance(pipeline.send([None]), FindNamed)
    assert isinstance(pipeline.send([[]]), Embed)
    with pytest.raises(RuntimeError, match="provider down"):
        pipeline.throw(RuntimeError("provider down"))


def test_an_embedding_failure_in_a_later_batch_stores_nothing():
    text = "\n\n".join(f"# Part {i}\n\nThe answer to part {i}." for i in range(EMBED_BATCH + 1))
    pipeline = add_document("long.md", text)
    assert isinstance(next(pipeline), FindDocuments)
    assert isinstance(pipeline.send([None]), FindNamed)
    assert isinstance(pipeline.send([[]]), Embed)
    assert isinstance(pipeline.send([[0.0]] * EMBED_BATCH), Embed)
    with pytest.raises(RuntimeError, match="provider down"):
        pipeline.throw(RuntimeError("provider down"))


def test_a_duplicate_is_neither_embedded_nor_stored_again():
    existing = StoredDocument(3, "faq.md", 1, created=False)
    outcome, effects = drive(add_document("copy.md", "We open at 9."), lambda e: [existing])
    assert [type(e) for e in effects] == [FindDocuments]
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


def test_a_group_embeds_all_new_chunks_together_and_skips_duplicates():
    from ragcore.knowledge.documents import prepare_document, store_new_documents

    docs = [
        prepare_document("a.md", "Alpha opens at nine."),
        prepare_document("b.md", "Beta closes at six."),
        prepare_document("c.md", "Alpha opens at nine."),  # the same content as a.md
        prepare_document("d.md", "Delta is stored already."),
    ]
    stored_before = StoredDocument(9, "d-old.md", 1, created=False)
    next_id = iter(range(100, 200))

    def answer(effect):
        match effect:
            case FindDocuments(content_hashes=digests):
                return [stored_before if d == docs[3].content_hash else None for d in digests]
            case FindNamed(names=names):
                return [[] for _ in names]
            case Embed(texts=texts):
                return [[float(len(t))] for t in texts]
            case StoreDocuments(documents=new):
                return [StoredDocument(next(next_id), d.name, len(d.chunks), True) for d in new]

    outcome, effects = drive(store_new_documents(docs), answer)
    [embed] = [e for e in effects if isinstance(e, Embed)]
    assert embed.texts == ("Alpha opens at nine.", "Beta closes at six.")
    [store] = [e for e in effects if isinstance(e, StoreDocuments)]
    assert [d.name for d in store.documents] == ["a.md", "b.md"]
    assert [(s.id, s.created) for s in outcome] == [
        (100, True),
        (101, True),
        (100, False),
        (9, False),
    ]


def test_a_new_version_replaces_every_document_holding_its_name_when_asked_to():
    old = StoredDocument(3, "refunds.md", 2, created=False)
    older = StoredDocument(1, "refunds.md", 1, created=False)  # from before names were kept one

    def answer(effect):
        match effect:
            case FindNamed(names=names):
                assert names == ("refunds.md",)
                return [[older, old]]
            case _:
                return recorded(effect)

    pipeline = add_document("refunds.md", "Refunds take 30 days.", replace=True)
    outcome, effects = drive(pipeline, answer)
    assert stored_one(effects).replaces == (1, 3)
    assert outcome.created and outcome.replaced == (older, old)
    assert effects[-1] == TeachGraph((7,), (1, 3))  # the graph forgets what it replaced


def test_the_same_content_again_replaces_nothing_and_stores_nothing():
    same = StoredDocument(3, "refunds.md", 1, created=False)
    outcome, effects = drive(add_document("refunds.md", "Refunds take 30 days."), lambda e: [same])
    assert [type(e) for e in effects] == [FindDocuments]
    assert outcome is same and outcome.replaced == ()


def test_the_rule_a_stored_content_is_a_no_op_a_new_one_replaces_the_name():
    from ragcore.knowledge.documents import replacing

    holder = StoredDocument(4, "a.md", 1, created=False)
    elsewhere = StoredDocument(5, "b.md", 1, created=False)
    for replace in (False, True):
        # the content is b.md's: nothing changes
        assert replacing(elsewhere, [holder], replace=replace) is None
        assert replacing(None, [], replace=replace) == ()
    assert replacing(None, [holder], replace=True) == (holder,)
    with pytest.raises(NameTaken, match=r"'a.md' is stored \(document 4\); .*replace: true"):
        replacing(None, [holder], replace=False, name="a.md")


def test_a_different_file_of_a_stored_name_is_refused_unless_replacing_is_asked():
    """Two different files may share a name (two packages' manual.html): the second is
    not stored over the first, nothing is embedded, and the refusal names the holder."""
    holder = StoredDocument(3, "manual.html", 5, created=False)

    def answer(effect):
        match effect:
            case FindNamed():
                return [[holder]]
            case _:
                return recorded(effect)

    pipeline = add_document("manual.html", "Ninja is a small build system.")
    with pytest.raises(NameTaken) as refused:
        drive(pipeline, answer)
    assert refused.value.holders == (holder,)
    assert "document 3" in str(refused.value)


def test_in_a_group_a_refused_name_leaves_the_others_stored():
    docs = [prepare_document("a.md", "Alpha."), prepare_document("b.md", "Beta.")]

    def answer(effect):
        match effect:
            case FindNamed(names=names):
                assert names == ("a.md", "b.md")
                return [[StoredDocument(3, "a.md", 1, created=False)], []]
            case _:
                return recorded(effect)

    outcome, effects = drive(store_new_documents(docs, how_to_replace="pass --replace"), answer)
    assert isinstance(outcome[0], NameTaken) and "pass --replace" in str(outcome[0])
    assert outcome[1].created and outcome[1].name == "b.md"
    [store] = [e for e in effects if isinstance(e, StoreDocuments)]
    assert [d.name for d in store.documents] == ["b.md"]


def test_a_group_with_two_documents_of_one_name_is_refused_before_any_effect():
    docs = [prepare_document("a.md", "One."), prepare_document("a.md", "Two.")]
    with pytest.raises(ValueError, match="two documents named 'a.md'"):
        next(store_new_documents(docs))


def test_a_content_stored_meanwhile_replaces_nothing():
    def answer(effect):
        match effect:
            case FindNamed():
                return [[StoredDocument(3, "a.md", 1, created=False)]]
            case StoreDocuments(documents=docs):
                return [StoredDocument(9, "b.md", 1, created=False) for _ in docs]
            case _:
                return recorded(effect)

    outcome, _ = drive(add_document("a.md", "Stored by another upload.", replace=True), answer)
    assert (outcome.id, outcome.created, outcome.replaced) == (9, False, ())


def test_deleted_documents_leave_the_graph_too_and_a_missing_one_teaches_nothing():
    gone = [StoredDocument(4, "a.md", 1, False), StoredDocument(6, "a.md", 2, False)]
    deleted, effects = drive(forget_documents("a.md"), lambda effect: gone)
    assert deleted == gone and effects == [DeleteDocuments("a.md"), TeachGraph((), (4, 6))]
    missing, effects = drive(forget_documents(5), lambda effect: [])
    assert missing == [] and effects == [DeleteDocuments(5)]
