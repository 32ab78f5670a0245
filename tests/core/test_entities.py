"""Entities found by the offline rules in sentences like those of company documents, the
Debian handbook and the news, the keys that fold their spellings, the relations of a
chunk, a question's candidate keys, and a model's reply (ragcore.knowledge.entities)."""

import pytest

from ragcore.knowledge.entities import (
    MAX_QUESTION_KEYS,
    MAX_SENTENCE_ENTITIES,
    aliases,
    chunk_graph,
    document_aliases,
    extract,
    graph_prompt,
    question_keys,
    read_graph_reply,
    resolve_key,
)
from ragcore.knowledge.graph import CO_OCCURS, Entity, Relation


def found(text, domain_terms=()):
    return {entity.key: entity.kind for entity in extract(text, domain_terms)}


# (text, entities expected as key -> kind, keys that must not be entities)
SENTENCES = [
    (
        "The Debian Project was founded by Ian Murdock in 1993. However, it grew fast.",
        {"debian project": "name", "ian murdock": "name"},
        {"the", "however", "1993", "it"},
    ),
    (
        "Install the package with APT, then edit /etc/apt/sources.list and apt.conf.",
        {"apt": "acronym", "/etc/apt/sources.list": "code", "apt.conf": "code"},
        {"install", "package", "then"},
    ),
    (
        "This release supports IPv6, and macOS users can sync their iPhone with PostgreSQL.",
        {"ipv6": "name", "macos": "name", "iphone": "name", "postgresql": "name"},
        {"this", "release"},
    ),
    (
        "Order #4521 contains SKU-1042 and ORD_2024_77; it shipped on 2024-01-15 with 5 boxes.",
        {"4521": "number", "sku1042": "code", "ord202477": "code"},
        {"order", "5", "2024", "20240115", "2024-01-15", "box"},
    ),
    (
        "Bank of America opened an office in New York next to the Université de Montréal.",
        {"bank of america": "name", "new york": "name", "université de montréal": "name"},
        {"bank", "america", "york", "of"},
    ),
    (
        "Debian 12 ships PostgreSQL 15 and Python 3.11; read chapter 5 and Step 2 first.",
        {"debian 12": "code", "postgresql 15": "code", "python 3.11": "code"},
        {"chapter 5", "step 2", "step"},
    ),
    (
        "Customers must report outages to the Support Desk. Support Desk staff reply "
        "within 4 hours, Monday to Friday.",
        {"support desk": "name"},
        {"customer", "customers", "monday", "friday", "4"},
    ),
    (
        "Getting Started With Debian\n\nRead the manual before you start.",
        {},
        {"getting started", "getting started with debian", "debian", "read"},
    ),
    (
        "WARNING: DO NOT REMOVE THE COVER WHILE THE UNIT IS ON. Contact Acme Corp instead.",
        {"acme corp": "name"},
        {"do", "not", "remove", "cover", "warning", "unit"},
    ),
    (
        "Write to support@acme.com or see https://www.debian.org/doc/ for the FAQ.",
        {"support@acme.com": "code", "https://www.debian.org/doc": "code"},
        {"faq", "write", "see"},
    ),
    (
        "Q3 revenue rose 12% at Siemens AG, CEO Roland Busch said on Thursday in Munich.",
        {"siemens ag": "name", "roland busch": "name", "munich": "name"},
        {"q3", "12", "thursday", "ceo roland busch", "ag"},
    ),
    (  # a table's cells begin as sentences do
        "| Plan | Price | Support |\n|------|-------|---------|\n| Basic | 10 EUR | Email |",
        {},
        {"plan", "price", "support", "basic", "eur", "email"},
    ),
    (  # the sentence's first word is a name: it opens a sentence of two capitalised words
        "Linus Torvalds wrote Linux in 1991. Linux now runs on x86 and amd64 machines.",
        {"linus torvalds": "name", "linux": "name", "x86": "code", "amd64": "code"},
        {"1991", "now"},
    ),
    (
        "Die Deutsche Bahn hat ihren Sitz in Berlin; Angela Merkel eröffnete den Bahnhof.",
        {"deutsche bahn": "name", "berlin": "name", "angela merkel": "name"},
        {"die", "in"},
    ),
    (
        "Le contrat a été signé par la Société Générale à Paris, en Côte d'Ivoire aussi.",
        {"société générale": "name", "paris": "name", "côte d'ivoire": "name"},
        {"le", "la", "contrat"},
    ),
]


@pytest.mark.parametrize(("text", "expected", "absent"), SENTENCES)
def test_the_rules_find_what_a_text_names_and_not_its_ordinary_capitals(text, expected, absent):
    entities = found(text)
    for key, kind in expected.items():
        assert entities.get(key) == kind, (key, entities)
    assert not absent & set(entities), entities


@pytest.mark.parametrize(
    "text",
    [
        "The installer is simple.",
        "However, the installer is simple.",
        "Install the package first.",
        "This is how it works.",
        "Configure the mirror, then reboot.",
        "Updated prices apply from next month.",
        "Finally, restart the service.",
    ],
)
def test_a_sentence_opening_with_an_ordinary_capitalised_word_names_nothing(text):
    assert extract(text) == ()


HANDBOOK = """# Installing Debian

Debian 12 "Bookworm" was released in June 2023 by the Debian Project. The release team,
led by Paul Gevers, coordinated the freeze. Security updates are published by the
Debian Security Team at https://security.debian.org.

Each line of /etc/apt/sources.list names a repository: deb http://deb.debian.org/debian
bookworm main. The package manager reads them; the package manager also checks
signatures with GnuPG keys. Apple Inc. and Acme GmbH mirror it.
"""


def test_a_handbook_page_with_wrapped_lines_headings_and_addresses():
    entities = found(HANDBOOK)
    assert entities == {
        "debian": "name",  # the heading's, after "Installing"
        "debian 12": "code",
        "bookworm": "name",
        "debian project": "name",
        "paul gevers": "name",
        "debian security team": "name",  # its line wraps before "Debian"
        "https://security.debian.org": "code",
        "/etc/apt/sources.list": "code",
        "http://deb.debian.org/debian": "code",
        "package manager": "term",
        "gnupg": "name",
        "apple inc": "name",  # "Inc." ends no sentence
        "acme gmbh": "name",  # and "GmbH" is no entity of its own
    }
    graph = chunk_graph(1, HANDBOOK)
    assert Relation("debian security team", "https://security.debian.org") in graph.relations
    assert Relation("debian project", "paul gevers") not in graph.relations


def test_a_sentence_initial_word_is_a_name_when_the_text_capitalises_it_mid_sentence():
    assert "debian" not in found("Debian is a free operating system.")
    assert found("Debian is free. Many servers run Debian.")["debian"] == "name"


def test_each_entity_comes_once_in_order_of_first_appearance():
    text = "Acme Corp sells to Globex. Globex pays Acme Corp late; Initech pays early."
    assert [e.key for e in extract(text)] == ["acme corp", "globex", "initech"]


@pytest.mark.parametrize(
    ("variants", "key"),
    [
        (["Debian Project", "debian  project", "DEBIAN PROJECT", "Debian\nProject"], None),
        (["Wi-Fi", "WiFi", "wi fi", "wifi", "WI-FI"], "wifi"),
        (["e-mail", "email", "e mail", "E-Mail"], "email"),
        (["invoice", "invoices"], "invoice"),
        (["policy", "policies"], "policy"),
        (["box", "boxes"], "box"),
        (["patch", "patches"], "patch"),
        (["cache", "caches"], "cache"),
        (["service level agreement", "service level agreements"], None),
        (["SLA", "SLAs", "sla"], "sla"),
        (["Debian's", "Debian"], "debian"),
        (["ORD_2024_77", "ORD-2024-77", "ord-2024-77"], "ord202477"),
    ],
)
def test_variants_of_one_name_resolve_to_one_key(variants, key):
    keys = {resolve_key(variant) for variant in variants}
    assert len(keys) == 1, keys
    if key is not None:
        assert keys == {key}


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("status", "status"),
        ("analysis", "analysis"),
        ("class", "class"),
        ("GDPR", "gdpr"),
        ("AWS", "aws"),
        ("macOS", "macos"),
        ("iOS", "ios"),
        ("Jenkins", "jenkins"),
        ("Linus Torvalds", "linus torvalds"),
        ("United States", "united states"),
        ("news", "news"),
        ("https", "https"),
        ("statuses", "status"),
        ("causes", "cause"),
        ("movies", "movie"),
    ],
)
def test_only_plurals_are_folded(name, key):
    assert resolve_key(name) == key


@pytest.mark.parametrize(
    "text",
    [
        "Our Service Level Agreement (SLA) covers uptime. The SLA excludes maintenance.",
        "The SLA (Service Level Agreement) covers uptime. The SLA excludes maintenance.",
        "The service level agreement (SLA) covers uptime. Each SLA excludes maintenance.",
    ],
)
def test_an_acronym_defined_in_the_text_is_its_long_form(text):
    entities = extract(text)
    assert [e.key for e in entities] == ["service level agreement"]
    assert entities[0].name.lower() == "service level agreement"
    assert aliases(text) == {"sla": "service level agreement"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "the General Data Protection Regulation (GDPR)",
            {"gdpr": "general data protection regulation"},
        ),
        ("the Department of Defense (DoD)", {"dod": "department of defense"}),
        ("Wi-Fi Protected Access (WPA2)", {"wpa2": "wifi protected access"}),
        ("APIs (application programming interfaces)", {"api": "application programming interface"}),
        ("the bank (BOA) and the tax (see below)", {}),
        ("support hours (CET) apply", {}),
    ],
)
def test_definitions_need_initials_that_spell_the_acronym(text, expected):
    assert aliases(text) == expected


def test_document_aliases_serve_the_chunks_that_only_use_the_acronym():
    chunks = [
        "This General Data Protection Regulation (GDPR) notice explains your rights.",
        "Acme Corp processes data under the GDPR.",
    ]
    defined = document_aliases(chunks)
    assert defined == {"gdpr": "general data protection regulation"}
    assert {e.key for e in chunk_graph(2, chunks[1]).entities} == {"acme corp", "gdpr"}
    graph = chunk_graph(2, chunks[1], aliases=defined)
    assert {e.key for e in graph.entities} == {"acme corp", "general data protection regulation"}
    assert graph.relations == (Relation("acme corp", "general data protection regulation"),)


def test_a_lowercase_term_counts_when_the_text_repeats_it():
    text = (
        "The service level agreement sets response times. Breaching the service level "
        "agreements costs credits, and the credits are paid monthly."
    )
    assert found(text) == {"service level agreement": "term"}
    assert found("The service level agreement sets response times.") == {}


def test_a_repeated_term_is_the_longest_repeated_phrase_not_its_parts():
    text = "Use the customer support portal. The customer support portal is open at night."
    assert found(text) == {"customer support portal": "term"}


@pytest.mark.parametrize(
    ("text", "terms", "expected"),
    [
        ("Invoices are sent monthly; each invoice is due in 30 days.", ["invoice"], {"invoice"}),
        (
            "Open the SUPPORT PORTAL or the support-portal app.",
            ["support portal"],
            {"support portal"},
        ),
        (
            "Our Refund Policies changed; the refund policy is online.",
            ["refund policy"],
            {"refund policy"},
        ),
        ("Install it with APT.", ["apt"], {"apt"}),
        ("The invoicing team is separate.", ["invoice"], set()),
    ],
)
def test_domain_terms_are_found_in_any_case_and_number(text, terms, expected):
    entities = found(text, terms)
    assert {k for k, kind in entities.items() if kind == "domain"} == expected


def test_a_domain_term_in_capitals_that_is_a_function_word_keeps_its_capitals():
    text = "Ask IT to reset it. The IT team works with us in the US."
    assert [(e.key, e.name) for e in extract(text, ["IT", "US"])] == [("it", "IT"), ("us", "US")]
    assert "it" in question_keys("how do i reach IT?", ["IT"])
    assert "it" not in question_keys("how do i reset it?", ["IT"])


def test_a_domain_term_wins_the_span_over_other_rules():
    text = "The Acme Support Portal is down. The Support Portal team knows."
    assert found(text) == {"acme support portal": "name", "support portal": "name"}
    entities = found(text, ["support portal"])
    assert entities["support portal"] == "domain"
    assert "acme support portal" not in entities


def test_relations_join_entities_of_one_sentence_only():
    text = (
        "Acme Corp signed the contract with Globex in Berlin. "
        "Initech Labs audits the Debian servers."
    )
    graph = chunk_graph(7, text)
    assert graph.chunk_id == 7
    assert [e.key for e in graph.entities] == [
        "acme corp",
        "globex",
        "berlin",
        "initech labs",
        "debian",
    ]
    assert set(graph.relations) == {
        Relation("acme corp", "globex", CO_OCCURS),
        Relation("acme corp", "berlin", CO_OCCURS),
        Relation("berlin", "globex", CO_OCCURS),
        Relation("debian", "initech labs", CO_OCCURS),
    }
    assert all(r.source < r.target for r in graph.relations)


def test_a_pair_named_in_several_sentences_is_one_relation():
    graph = chunk_graph(1, "Acme Corp buys from Globex. Later Globex sued Acme Corp.")
    assert graph.relations == (Relation("acme corp", "globex"),)


def test_a_crowded_sentence_relates_only_its_first_entities():
    names = [
        f"{name} Group"
        for name in """Acme Globex Initech Umbrella Hooli Vandelay Soylent Stark Wayne Tyrell
        Cyberdyne Wonka Dunder Gringotts Oscorp Virtucon Nakatomi Monarch Aperture Prestige
        """.split()
    ]
    graph = chunk_graph(1, "We met " + ", ".join(names) + ".")
    assert len(graph.entities) == 20
    related = {key for r in graph.relations for key in (r.source, r.target)}
    assert len(related) == MAX_SENTENCE_ENTITIES
    assert len(graph.relations) == MAX_SENTENCE_ENTITIES * (MAX_SENTENCE_ENTITIES - 1) // 2


@pytest.mark.parametrize(
    ("question", "wanted", "never"),
    [
        (
            "what does the sla cover for acme corp?",
            {"sla", "acme corp", "acme"},
            {"what", "the", "for"},
        ),
        ("How do I connect to the wi-fi?", {"wifi"}, {"how", "do", "i", "to", "connect to"}),
        ("which invoices are overdue", {"invoice", "invoices"}, {"which", "are"}),
        ("is jenkins down?", {"jenkins"}, {"is", "down"}),
        ("where is order #4521?", {"4521"}, {"where", "is"}),
        ("Who founded the Debian Project?", {"debian project"}, {"who", "the"}),
        ("Wer leitet die Deutsche Bahn?", {"deutsche bahn"}, {"wer", "die"}),
    ],
)
def test_question_keys_for_questions_as_typed(question, wanted, never):
    keys = question_keys(question)
    assert wanted <= set(keys), keys
    assert not never & set(keys), keys
    assert len(keys) == len(set(keys))


def test_question_keys_use_domain_terms_and_aliases_and_are_capped():
    assert "refund policy" in question_keys("what are the refund policies?", ["refund policy"])
    keys = question_keys("what does the sla cover?", aliases={"sla": "service level agreement"})
    assert {"sla", "service level agreement"} <= set(keys)
    long = " ".join(f"word{chr(97 + i)}{chr(97 + j)}" for i in range(6) for j in range(6))
    assert len(question_keys(long)) == MAX_QUESTION_KEYS


PASSAGE = (
    "In 2019 Acme Corp acquired Globex for $2 billion. Globex's founder, Hank Scorpio, stayed on."
)


@pytest.mark.parametrize(
    "reply",
    [
        '{"entities": [{"name": "Acme Corp", "type": "Organization"}, {"name": "Globex", '
        '"type": "organization"}], "relations": [{"source": "Acme Corp", "target": "Globex", '
        '"type": "Acquired"}]}',
        'Here is the graph:\n```json\n{"entities": [{"name": "acme corp", "type": "Organization"}, '
        '{"name": "Globex", "type": "organization"}], "relations": [{"source": "acme corp", '
        '"target": "Globex", "type": "acquired"}]}\n```\nLet me know if you need more.',
    ],
)
def test_a_model_reply_is_read_from_its_json(reply):
    entities, relations = read_graph_reply(reply, PASSAGE)
    assert [(e.key, e.kind) for e in entities] == [
        ("acme corp", "organization"),
        ("globex", "organization"),
    ]
    assert relations == (Relation("acme corp", "globex", "acquired"),)


def test_a_model_reply_keeps_only_what_the_passage_names():
    reply = (
        '{"entities": [{"name": "Acme Corp", "type": "org"}, {"name": "Initech", "type": "org"},'
        ' {"name": "Hank Scorpio", "type": "Person"}, {"name": "the"}, "junk"],'
        ' "relations": [{"source": "Acme Corp", "target": "Initech", "type": "owns"},'
        ' {"source": "Hank Scorpio", "target": "Acme Corp", "type": "Works For"},'
        ' {"source": "Acme Corp", "target": "Acme Corp", "type": "is"}]}'
    )
    entities, relations = read_graph_reply(reply, PASSAGE)
    assert [e.key for e in entities] == ["acme corp", "hank scorpio"]
    assert entities[1] == Entity("hank scorpio", "Hank Scorpio", "person")
    assert relations == (Relation("hank scorpio", "acme corp", "works_for"),)


@pytest.mark.parametrize(
    "reply",
    ["", "I could not find any entities.", "{not json}", '["Acme Corp"]', '{"answer": 42}'],
)
def test_a_reply_that_is_not_the_graph_gives_nothing(reply):
    assert read_graph_reply(reply, PASSAGE) == ((), ())


def test_the_prompt_asks_for_the_json_and_holds_the_passage():
    prompt = graph_prompt(PASSAGE)
    assert '"entities"' in prompt and '"relations"' in prompt
    assert PASSAGE in prompt


def test_nothing_named_gives_nothing():
    assert extract("") == ()
    assert extract("the cat sat on the mat, and 5 of 2024 were red.") == ()
    assert chunk_graph(4, "") == chunk_graph(4, "   \n\n ")
    assert question_keys("what is it?") == ()


def test_a_possessive_ends_a_name_and_is_not_part_of_its_key():
    text = "Call Acme's Support Team. Debian's installer runs; Jenkins' logs stay."
    entities = found(text)
    assert {"acme", "support team"} <= set(entities)
    assert "acme support team" not in entities
    assert resolve_key("Jenkins'") == "jenkins"


def test_a_model_reply_is_capped():
    names = [f"Node{i:02d}" for i in range(50)]
    passage = " ".join(names)
    reply = (
        '{"entities": ['
        + ", ".join(f'{{"name": "{n}", "type": "thing"}}' for n in names)
        + '], "relations": ['
        + ", ".join(
            f'{{"source": "{a}", "target": "{b}", "type": "next"}}'
            for a in names
            for b in names
            if a < b
        )
        + "]}"
    )
    entities, relations = read_graph_reply(reply, passage)
    assert len(entities) == 32
    assert len(relations) == 64
