"""A document replaced by name (only when asked), renamed, and the documents listed a page
at a time, found by name."""

from __future__ import annotations

import psycopg
import pytest
import trio

from ragcore.knowledge.chunking import chunk_text
from ragcore.knowledge.documents import StoreDocument, content_hash
from ragio.knowledge.store import store_document
from tests.io.test_documents import ask, upload
from tests.io.test_http_errors import assert_problem, count_rows


async def add(api, name: str, text: str, **extra):
    return await api.post("/documents", json={"name": name, "text": text, **extra})


async def test_a_different_file_of_a_stored_name_is_refused_naming_the_stored_one(
    api, database_url
):
    """Two packages' manual.html: the second upload must not delete the first."""
    bzip2 = (await add(api, "manual.html", "bzip2 compresses files with Burrows-Wheeler.")).json()
    ninja = b"<h1>Ninja</h1><p>Ninja is a small build system with a focus on speed.</p>"
    for refused in (
        await upload(api, "manual.html", ninja, "text/html"),
        await add(api, "manual.html", "Ninja is a small build system.", replace=False),
    ):
        body = assert_problem(refused, 409, f"document {bzip2['id']}")
        assert (body["field"], body["existing_id"]) == ("name", bzip2["id"])
        assert "'manual.html'" in body["detail"] and "replace: true" in body["detail"]
    listed = (await api.get("/documents")).json()["documents"]
    assert [(d["id"], d["name"]) for d in listed] == [(bzip2["id"], "manual.html")]
    assert count_rows(database_url) == (1, 1)
    assert "Burrows-Wheeler" in (await ask(api, "How does bzip2 compress files?"))["answer"]


async def test_replace_must_be_true_or_false(api, database_url):
    assert_problem(await upload(api, "a.md", b"Alpha.", "text/markdown", replace="yes"), 422)
    assert_problem(await add(api, "a.md", "Alpha.", replace="yes"), 422)
    assert count_rows(database_url) == (0, 0)


async def test_a_new_version_of_a_document_replaces_the_old_one_when_asked(api, database_url):
    old = (await add(api, "refunds.md", "# Refunds\n\nRefunds are paid within 14 days.")).json()
    assert old["replaced"] == []
    response = await upload(
        api,
        "refunds.md",
        b"# Refunds\n\nRefunds are paid within 30 days.",
        "text/markdown",
        replace="true",
    )
    assert response.status_code == 201, response.text
    new = response.json()
    assert new["id"] != old["id"] and new["duplicate"] is False
    assert [(d["id"], d["name"], d["chunk_count"]) for d in new["replaced"]] == [
        (old["id"], "refunds.md", 1)
    ]
    assert response.headers["location"] == f"/documents/{new['id']}"

    listed = (await api.get("/documents")).json()
    assert [(d["id"], d["name"]) for d in listed["documents"]] == [(new["id"], "refunds.md")]
    assert count_rows(database_url) == (1, new["chunk_count"])
    assert_problem(await api.get(f"/documents/{old['id']}"), 404)

    answer = await ask(api, "How fast are refunds paid?")
    assert "30 days" in answer["answer"] and "14 days" not in answer["answer"]
    assert {c["document_id"] for c in answer["citations"]} == {new["id"]}


async def test_the_same_file_again_changes_nothing(api, database_url):
    first = (await add(api, "hours.txt", "We open at 9 am.")).json()
    again = await add(api, "hours.txt", "We open at 9 am.\n")
    assert again.status_code == 200
    assert again.json() == {**first, "duplicate": True}
    assert count_rows(database_url) == (1, 1)


async def test_another_name_is_another_document(api, database_url):
    await add(api, "hours.txt", "We open at 9 am.")
    other = (await add(api, "Hours.txt", "We open at 10 am.")).json()
    assert other["replaced"] == []  # names are compared exactly
    assert count_rows(database_url)[0] == 2


async def test_every_older_copy_of_a_name_is_replaced(api, service, database_url):
    """Documents stored before a name held one version: all of them go."""
    a = (await add(api, "faq.md", "Version one of the answers.")).json()
    b = (await add(api, "faq-2.md", "Version two of the answers.")).json()
    with psycopg.connect(database_url) as conn:  # as a re-upload left them before
        conn.execute("UPDATE documents SET name = 'faq.md' WHERE id = %s", (b["id"],))
    new = (await add(api, "faq.md", "Version three of the answers.", replace=True)).json()
    assert sorted(d["id"] for d in new["replaced"]) == [a["id"], b["id"]]
    assert count_rows(database_url)[0] == 1


class TestAFailedReplacement:
    @pytest.fixture
    def settings_overrides(self):
        return {"max_document_chunks": 3}

    async def test_leaves_the_old_version_whole(self, api, database_url):
        old = (await add(api, "prices.md", "# Prices\n\nTea costs 3 euros.")).json()
        too_long = "\n\n".join(f"# Part {i}\n\nFacts about part {i}." for i in range(10))
        too_long_version = await add(api, "prices.md", too_long, replace=True)
        assert_problem(too_long_version, 413, "MAX_DOCUMENT_CHUNKS")
        listed = (await api.get("/documents")).json()["documents"]
        assert [d["id"] for d in listed] == [old["id"]]
        assert count_rows(database_url) == (1, 1)
        assert "3 euros" in (await ask(api, "How much does tea cost?"))["answer"]


async def test_an_embedding_failure_leaves_the_old_version_whole(api, service, database_url):
    old = (await add(api, "prices.md", "# Prices\n\nTea costs 3 euros.")).json()
    real = service.embedder

    class DocumentsFail:
        """The provider fails for documents; questions are still embedded."""

        name, space = real.name, real.space

        async def embed(self, texts, purpose):
            if purpose == "document":
                raise RuntimeError("embedding provider down")
            return await real.embed(texts, purpose)

    service.embedder = DocumentsFail()
    new = await add(api, "prices.md", "# Prices\n\nTea costs 4 euros.", replace=True)
    assert_problem(new, 500)
    listed = (await api.get("/documents")).json()["documents"]
    assert [d["id"] for d in listed] == [old["id"]]
    assert count_rows(database_url) == (1, 1)
    assert "3 euros" in (await ask(api, "How much does tea cost?"))["answer"]


async def test_concurrent_new_versions_leave_one(api, database_url):
    results = []

    async def send(i):
        text = f"Policy version {i} says {i} days."
        results.append(await add(api, "policy.md", text, replace=True))

    async with trio.open_nursery() as nursery:
        for i in range(4):
            nursery.start_soon(send, i)
    statuses = sorted(r.status_code for r in results)
    assert set(statuses) <= {201, 409} and 201 in statuses
    for refused in (r for r in results if r.status_code == 409):
        assert_problem(refused, 409, "send it again")
    listed = (await api.get("/documents")).json()["documents"]
    assert len(listed) == 1
    assert count_rows(database_url) == (1, 1)


async def test_a_new_version_stored_meanwhile_with_the_same_content_is_its_duplicate(
    api, service, database_url
):
    """Two uploads of one new version at the same moment (each read the old one as the
    name's holder, tests/io/test_replicas.py races them in two processes): the later finds
    its content stored by the other, and is its duplicate rather than a 409."""
    old = (await add(api, "racks.md", "# Racks\n\nRacks are blue.")).json()
    text = "# Racks\n\nRacks are painted green now."
    chunks = tuple(chunk_text(text))
    vectors = await service.embedder.embed([c.text for c in chunks], "document")
    new = StoreDocument(
        "racks.md",
        content_hash(text),
        text,
        chunks,
        tuple(tuple(v) for v in vectors),
        "text/markdown",
        len(text),
        replaces=(old["id"],),
    )
    first = await service.database.run(store_document, new)
    again = await service.database.run(store_document, new)
    assert first.created and first.id != old["id"]
    assert (again.id, again.created, again.replaced) == (first.id, False, ())
    assert count_rows(database_url)[0] == 1


async def test_concurrent_new_documents_of_one_name_store_one(api, database_url):
    """Without replace, uploads racing for a new name: one is stored, the rest refused."""
    results = []

    async def send(i):
        results.append(await add(api, "terms.md", f"Terms version {i} say {i} weeks."))

    async with trio.open_nursery() as nursery:
        for i in range(4):
            nursery.start_soon(send, i)
    assert sorted(r.status_code for r in results) == [201, 409, 409, 409]
    assert count_rows(database_url) == (1, 1)


# ------------------------------------------------------------------ renaming


async def test_a_document_is_renamed_and_cited_by_its_new_name(api, database_url):
    doc = (await add(api, "manual.html", "bzip2 compresses files with Burrows-Wheeler.")).json()
    renamed = await api.patch(f"/documents/{doc['id']}", json={"name": " bzip2-manual.html "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json() == {
        k: v for k, v in doc.items() if k not in ("duplicate", "replaced")
    } | {"name": "bzip2-manual.html"}
    assert (await api.get(f"/documents/{doc['id']}")).json()["name"] == "bzip2-manual.html"
    answer = await ask(api, "How does bzip2 compress files?")
    assert {c["document_name"] for c in answer["citations"]} == {"bzip2-manual.html"}
    # the old name is free: ninja's manual.html is stored beside it
    ninja = await add(api, "manual.html", "Ninja is a small build system.")
    assert ninja.status_code == 201 and ninja.json()["replaced"] == []
    assert count_rows(database_url)[0] == 2


async def test_a_rename_to_a_held_name_or_of_no_document_is_refused(api, database_url):
    a = (await add(api, "a.md", "Alpha is the first letter.")).json()
    b = (await add(api, "b.md", "Beta is the second letter.")).json()
    taken = assert_problem(await api.patch(f"/documents/{b['id']}", json={"name": "a.md"}), 409)
    assert (taken["field"], taken["existing_id"]) == ("name", a["id"])
    same = await api.patch(f"/documents/{a['id']}", json={"name": "a.md"})  # its own: no change
    assert same.status_code == 200 and same.json()["name"] == "a.md"
    blank = assert_problem(await api.patch(f"/documents/{a['id']}", json={"name": "  "}), 422)
    assert blank["field"] == "name"
    assert_problem(await api.patch(f"/documents/{a['id']}", json={"title": "x"}), 422, "title")
    assert_problem(await api.patch("/documents/999", json={"name": "c.md"}), 404)
    listed = (await api.get("/documents")).json()["documents"]
    assert [d["name"] for d in listed] == ["a.md", "b.md"]


# ------------------------------------------------------------------ listing


async def test_documents_are_listed_a_page_at_a_time(api):
    ids = [
        (await add(api, f"note-{i}.txt", f"Note number {i} of the shop.")).json()["id"]
        for i in range(5)
    ]
    first = (await api.get("/documents", params={"limit": 2})).json()
    assert [d["id"] for d in first["documents"]] == ids[:2]
    assert first["total"] == 5
    assert first["next"] == "/documents?limit=2&offset=2"
    second = (await api.get(first["next"])).json()
    assert [d["id"] for d in second["documents"]] == ids[2:4]
    last = (await api.get(second["next"])).json()
    assert [d["id"] for d in last["documents"]] == ids[4:]
    assert last["next"] is None and last["total"] == 5
    everything = (await api.get("/documents")).json()
    assert len(everything["documents"]) == 5 and everything["next"] is None


async def test_documents_are_listed_newest_first_when_asked_and_next_keeps_the_order(api):
    ids = [
        (await add(api, f"note-{i}.md", f"Note number {i} of the shop.")).json()["id"]
        for i in range(4)
    ]
    await add(api, "other.txt", "Not a note at all.")
    first = (await api.get("/documents", params={"order": "newest", "limit": 2, "q": ".md"})).json()
    assert [d["id"] for d in first["documents"]] == ids[:1:-1]
    assert first["total"] == 4
    assert first["next"] == "/documents?limit=2&offset=2&q=.md&order=newest"
    second = (await api.get(first["next"])).json()
    assert [d["id"] for d in second["documents"]] == ids[1::-1]
    assert second["next"] is None
    oldest = (await api.get("/documents", params={"order": "oldest", "limit": 4})).json()
    assert [d["id"] for d in oldest["documents"]] == ids
    assert oldest["next"] == "/documents?limit=4&offset=4"  # the default goes without saying
    refused = assert_problem(await api.get("/documents", params={"order": "latest"}), 422)
    assert refused["field"] == "order" and "oldest, newest" in refused["detail"]


async def test_documents_are_found_by_a_part_of_their_name_in_any_case(api):
    await add(api, "Refund policy.md", "Refunds take 30 days.")
    await add(api, "shipping.md", "Parcels ship in 2 days.")
    await add(api, "100%_sure.txt", "Some certain facts.")
    await add(api, "100 percent.txt", "Other facts entirely.")

    def names(response):
        assert response.status_code == 200, response.text
        return [d["name"] for d in response.json()["documents"]]

    assert names(await api.get("/documents", params={"q": "REFUND"})) == ["Refund policy.md"]
    assert names(await api.get("/documents", params={"q": "%_"})) == ["100%_sure.txt"]
    assert names(await api.get("/documents", params={"q": "0_"})) == []  # _ is no wildcard
    assert names(await api.get("/documents", params={"q": "no such"})) == []
    found = (await api.get("/documents", params={"q": ".md", "limit": 1})).json()
    assert found["total"] == 2
    assert found["next"] == "/documents?limit=1&offset=1&q=.md"
    assert [d["name"] for d in (await api.get(found["next"])).json()["documents"]] == [
        "shipping.md"
    ]
    quote = await api.get("/documents", params={"q": "'; DROP TABLE documents; --"})
    assert names(quote) == []
    assert len(names(await api.get("/documents"))) == 4


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"offset": "1.5"}, "offset"),
        ({"q": "x" * 256}, "q"),
    ],
)
async def test_a_bad_paging_or_search_parameter_is_422_naming_it(api, params, field):
    problem = assert_problem(await api.get("/documents", params=params), 422)
    assert problem["field"] == field


async def test_where_a_document_is_published_is_kept_and_cited(api):
    page = "https://shop.example.com/returns"
    doc = await add(api, "returns.md", "Items can be returned within 30 days.", source_url=page)
    assert doc.status_code == 201, doc.text
    assert doc.json()["source_url"] == page
    answer = await ask(api, "How long do I have to return an item?")
    assert answer["citations"][0]["source_url"] == page
    other = await upload(
        api, "hours.txt", b"We open at 9 am.", "text/plain", source_url="https://shop.example.com/h"
    )
    assert other.json()["source_url"] == "https://shop.example.com/h"
    cleared = await api.patch(f"/documents/{doc.json()['id']}", json={"source_url": ""})
    assert "source_url" not in cleared.json()  # left out when not said
    answer = await ask(api, "How long do I have to return an item?")
    assert "source_url" not in answer["citations"][0]
    for bad in ("ftp://x.example/a", "https://user:pw@x.example/", "not a url"):
        refused = await add(api, "x.md", "Some text.", source_url=bad)
        assert assert_problem(refused, 422)["field"] == "source_url"
    assert_problem(
        await upload(api, "y.txt", b"Words.", "text/plain", source_url="javascript:alert(1)"), 422
    )
