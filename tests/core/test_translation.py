"""Questions in another language than the documents': FreeDict's entries read, the
question's words and their translations, and the offline answer they give."""

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.chat.extractive import extractive_answer
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.chat.prompts import build_prompt
from ragcore.chat.support import supports_answer
from ragcore.chat.translation import (
    TranslateWords,
    compound_parts,
    compound_translations,
    entry_headword,
    entry_translations,
    question_terms,
    search_text,
)
from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.effects import Embed, SearchChunks
from ragcore.knowledge.retrieval import RetrievedHit
from ragcore.language import DetectLanguage, LanguageGuess, not_found
from ragcore.sources import Hit, number_sources
from tests.core.drive import drive

# entries as FreeDict's dictd files hold them (German: from Ding, with synonyms and
# cross-references; French: numbered senses)
GERMAN_ENTRY = (
    "sperren /ʃpˈɛrən/ <v>\nblock <v>, bar <v>, lock sth. <v> [Br.]\n"
    "   Synonyms: {blockieren}, {absperren}\n\n see: {sperrend}, {gesperrt}\n\n"
)
FRENCH_ENTRY = "défaut /defo/ <n, masc>\n1. damage\n2. abuse\n3. absence, lack, shortage\n"
PHRASE_ENTRY = "mit jdm. in Konflikt geraten /mɪt/ <v, intr>\ncome into conflict with sb. <v>\n"
EXAMPLE_ENTRY = (
    "verwenden /fɛɾvˈɛndən/ <v>\nutilize <v> [eAm.] , utilise sth. <v>\n"
    '      "etw. wiederverwenden"  - re-utilize sth.\n'
    "   Synonyms: {etw. anwenden}\n"
)
PORT_ENTRY = "Port /pɔrt/ <masc, n, sg>\nport <n>, implanted venous access port central venous\n"


def test_an_entry_gives_its_headword_and_its_first_translations_without_labels():
    assert entry_headword(GERMAN_ENTRY) == "sperren"
    assert entry_translations(GERMAN_ENTRY) == ("block", "bar", "lock")
    assert entry_translations(FRENCH_ENTRY) == ("damage", "abuse", "absence")
    assert entry_translations(EXAMPLE_ENTRY) == ("utilize", "utilise")


def test_a_phrase_is_no_headword_and_a_description_no_translation():
    assert entry_headword(PHRASE_ENTRY) is None
    assert entry_translations(PORT_ENTRY) == ("port",)  # four words or more: left out


def test_each_word_of_the_question_holds_its_translations():
    translations = {"sperre": ("block", "bar"), "adresse": ("address",)}
    terms = question_terms("Wie sperre ich eine IP-Adresse?", translations)
    assert frozenset({"sperre", "block", "bar"}) in terms
    assert frozenset({"adresse", "address"}) in terms
    assert frozenset({"ip"}) in terms  # no dictionary knows it: itself
    assert search_text("Wie sperre ich eine IP-Adresse?", translations) == (
        "Wie sperre ich eine IP-Adresse? block bar address"
    )


def test_a_word_that_is_its_own_translation_is_not_translated():
    translations = {"server": ("server", "waiter"), "apache": ("apache", "ruffian")}
    question = "Wo ist der Apache Server?"
    assert "waiter" not in search_text(question, translations)
    assert frozenset({"server"}) in question_terms(question, translations)


SOURCES = (
    "To block a single address, add the line Require not ip 192.0.2.1 to the section.",
    "The server listens on port 80 by default.",
)


def german_prompt(translations):
    hits = [Hit(i, i, f"doc{i}.html", text, 0.5) for i, text in enumerate(SOURCES, 1)]
    question = "Wie sperre ich eine einzelne Adresse?"
    terms = question_terms(question, translations) if translations else None
    return build_prompt(question, number_sources(hits), "de", terms=terms)


def test_offline_a_question_in_german_is_answered_with_the_english_sentence_it_asks_for():
    translations = {"sperre": ("block", "bar"), "adresse": ("address",)}
    answer = extractive_answer(german_prompt(translations))
    assert answer.startswith("To block a single address") and answer.endswith("[1]")
    assert "port 80" not in answer


def test_without_translations_the_german_words_find_nothing_to_quote():
    assert extractive_answer(german_prompt({})) == not_found("de")


def test_the_words_support_an_answer_through_their_translations():
    # off the topic by meaning (similarity under the floor): the words decide
    hits = [
        RetrievedHit(i, i, f"doc{i}.html", text, 0.5, similarity=0.35, topic_floor=0.45)
        for i, text in enumerate(SOURCES, 1)
    ]
    sources = number_sources(hits)
    question = "Sperre einzelne Adresse"
    translations = {"sperre": ("block",), "einzelne": ("single",), "adresse": ("address",)}
    assert supports_answer(question, sources, None, question_terms(question, translations))
    assert not supports_answer(question, sources, None)


POLICY = ChatPolicy(max_context_chars=12000, max_output_tokens=256, temperature=0.2)


def pipeline_answer(question, language, translations):
    def answer(effect):
        match effect:
            case DetectLanguage():
                return [LanguageGuess(language, language, 0.99)]
            case TranslateWords():
                return translations
            case Embed():
                return [[0.1, 0.2, 0.3]] if effect.texts == (question,) else [[0.4, 0.5, 0.6]]
            case SearchChunks():
                hits = [Hit(1, 1, "access.html", SOURCES[0], 0.9)]
                return hits
            case Generate():
                return ModelReply("Mit Require not ip [1].", provider="m", model="m1")
            case FindOwnerAnswer():
                return None
        raise AssertionError(effect)

    return drive(answer_question(ChatRequest(question), POLICY), answer)


def test_the_search_has_the_translations_and_the_model_the_question_itself():
    question = "Wie sperre ich eine einzelne Adresse?"
    translations = {"sperre": ("block", "bar"), "adresse": ("address",)}
    _, effects = pipeline_answer(question, "de", translations)
    translate, parts = [e for e in effects if isinstance(e, TranslateWords)]
    assert translate.language == "de" and "sperre" in translate.words
    assert "einzelne" not in parts.words and "einzeln" in parts.words  # unknown: its parts
    [search] = [e for e in effects if isinstance(e, SearchChunks)]
    assert search.text == f"{question} block bar address"
    assert search.vector == (0.4, 0.5, 0.6)  # the question and its translations, embedded
    [generate] = [e for e in effects if isinstance(e, Generate)]
    assert f"Question: {question}" in generate.prompt.user
    assert generate.prompt.system.endswith("Write the answer in German.")


def test_an_english_question_is_not_translated():
    question = "How do I block a single address?"
    _, effects = pipeline_answer(question, "en", {})
    assert not any(isinstance(e, TranslateWords) for e in effects)
    [search] = [e for e in effects if isinstance(e, SearchChunks)]
    assert search.text == question and search.vector == (0.1, 0.2, 0.3)


def test_a_compound_no_dictionary_knows_is_read_as_its_parts():
    known = {
        "bestand": ("dossier", "file"),
        "bestanden": ("dossier", "file"),
        "configuratie": ("configuration",),
        "arbeit": ("work",),
        "speicher": ("memory",),
    }
    assert compound_translations("configuratiebestanden", known) == (
        "configuration",
        "dossier",
        "file",
    )
    assert compound_translations("arbeitsspeicher", known) == ("work", "memory")  # linking s
    assert compound_translations("syntaxfouten", known) == ()  # its last part unknown
    assert "bestanden" in compound_parts("configuratiebestanden")
    assert all(len(part) >= 4 for part in compound_parts("configuratiebestanden"))


def test_a_dutch_compound_is_looked_up_by_its_parts_only_when_unknown_whole():
    question = "Waar staat het configuratiebestand?"
    parts_known = {"bestand": ("dossier", "file"), "configuratie": ("configuration",)}

    def answer(effect):
        match effect:
            case DetectLanguage():
                return [LanguageGuess("nl", "Dutch", 0.99)]
            case TranslateWords() if "configuratiebestand" in effect.words:
                return {"staat": ("state",)}  # the compound unknown whole
            case TranslateWords():
                return {p: t for p, t in parts_known.items() if p in effect.words}
            case Embed():
                return [[0.1, 0.2, 0.3]]
            case SearchChunks():
                return []
            case FindOwnerAnswer():
                return None
        raise AssertionError(effect)

    _, effects = drive(answer_question(ChatRequest(question), POLICY), answer)
    [search] = [e for e in effects if isinstance(e, SearchChunks)]
    assert search.text == f"{question} state configuration dossier file"
