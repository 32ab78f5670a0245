"""The chat pipeline driven with recorded effect results: no server, no network."""

import pytest

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.chat.prompts import REMINDER
from ragcore.chat.translation import TranslateWords
from ragcore.employees.learning import History, RecordInteraction
from ragcore.employees.memory import FetchRoleMemory, FindUnembeddedMemory
from ragcore.errors import InvalidInput
from ragcore.generation import GROUNDING_INSTRUCTIONS, Generate, ModelReply
from ragcore.knowledge.effects import Embed, FindMentions, SearchChunks
from ragcore.knowledge.retrieval import RetrievedHit
from ragcore.language import DetectLanguage, LanguageGuess, not_found
from ragcore.sources import Hit
from tests.core.drive import drive

POLICY = ChatPolicy(max_context_chars=12000, max_output_tokens=256, temperature=0.2)
HITS = [
    Hit(11, 1, "refunds.md", "Returns are accepted within 30 days.", 0.9, ("Returns",)),
    Hit(12, 2, "shipping.md", "We ship to the EU.", 0.4),
]


def recorded(hits=HITS, reply="Within 30 days [1].", mentioned=frozenset()):
    """``mentioned``: the names the documents mention beyond the sources found."""

    def answer(effect):
        match effect:
            case FindMentions(names=names):
                return frozenset(names) & mentioned
            case DetectLanguage():
                return [LanguageGuess("en", "English", 0.9)]
            case TranslateWords():
                return {}  # no dictionary knows the words
            case FindOwnerAnswer():
                return None
            case Embed():
                return [[0.1, 0.2, 0.3]]
            case SearchChunks():
                return list(hits)
            case Generate():
                return ModelReply(reply, provider="recorded", model="m1")
            case FindUnembeddedMemory():
                return []  # every memory item has its vector
            case FetchRoleMemory():
                return []
            case RecordInteraction():
                return History(recorded=True)  # nothing near it yet: nothing learned
        raise AssertionError(effect)

    return answer


def test_embeds_searches_generates_and_cites():
    request = ChatRequest("How long do I have to return something?")
    outcome, effects = drive(answer_question(request, POLICY), recorded())
    assert [type(e) for e in effects] == [
        Embed,
        FindOwnerAnswer,
        SearchChunks,
        Generate,
    ]
    assert outcome.answer == "Within 30 days [1]."
    assert [(c.number, c.document_name, c.chunk_id) for c in outcome.citations] == [
        (1, "refunds.md", 11)
    ]
    assert (outcome.provider, outcome.model) == ("recorded", "m1")


def test_the_reminder_goes_to_generation_but_not_to_embedding_or_search():
    question = "How long do I have to return something?"
    _, (embed, find, search, generate) = drive(
        answer_question(ChatRequest(question), POLICY), recorded()
    )
    assert embed.texts == (question,) and embed.purpose == "query"
    assert find.question == question and find.vector == (0.1, 0.2, 0.3)
    assert search.text == question and search.vector == (0.1, 0.2, 0.3)
    assert REMINDER not in search.text
    prompt = generate.prompt
    assert prompt.system.startswith(GROUNDING_INSTRUCTIONS)
    assert prompt.system.endswith("Write the answer in English.")
    assert prompt.user.endswith(f"Question: {question}\n\n{REMINDER}")
    assert "[1] (refunds.md > Returns)\nReturns are accepted within 30 days." in prompt.user
    assert "[2] (shipping.md)\nWe ship to the EU." in prompt.user
    assert (generate.max_output_tokens, generate.temperature) == (256, 0.2)


def test_context_over_the_budget_loses_the_lowest_ranked_chunks():
    policy = ChatPolicy(max_context_chars=40, max_output_tokens=256, temperature=0.2)
    _, effects = drive(answer_question(ChatRequest("return?"), policy), recorded())
    sources = effects[-1].prompt.sources
    assert [s.hit.chunk_id for s in sources] == [11]


def test_a_marker_for_a_source_that_was_not_supplied_is_removed():
    outcome, _ = drive(
        answer_question(ChatRequest("return?"), POLICY), recorded(reply="30 days [1][5].")
    )
    assert outcome.answer == "30 days [1]."
    assert [c.number for c in outcome.citations] == [1]


def test_with_nothing_retrieved_the_provider_is_not_called():
    outcome, effects = drive(answer_question(ChatRequest("anything?"), POLICY), recorded(hits=[]))
    assert [type(e) for e in effects] == [
        Embed,
        FindOwnerAnswer,
        SearchChunks,
    ]  # too short to detect a language
    assert outcome.answer == not_found("en") and outcome.citations == ()
    assert outcome.provider is None


@pytest.mark.parametrize(
    ("question", "message"),
    [(None, "is required"), ("   ", "must not be blank"), ("x" * 4001, "the limit is 4000")],
)
def test_a_bad_question_is_refused_before_any_effect(question, message):
    pipeline = answer_question(ChatRequest(question), POLICY)
    with pytest.raises(InvalidInput, match=message) as raised:
        next(pipeline)
    assert raised.value.field == "question"


def test_the_answer_is_asked_for_in_the_detected_language():
    def german(effect):
        if isinstance(effect, DetectLanguage):
            return [LanguageGuess("de", "German", 0.95)]
        return recorded()(effect)

    outcome, effects = drive(
        answer_question(ChatRequest("Wie lange kann ich etwas zurückgeben?"), POLICY), german
    )
    assert effects[-1].prompt.system.endswith("Write the answer in German.")
    assert effects[-1].prompt.language == "de"
    assert outcome.language == "de"


def test_with_nothing_retrieved_the_answer_says_so_in_the_users_language():
    def german(effect):
        if isinstance(effect, DetectLanguage):
            return [LanguageGuess("de", "German", 0.95)]
        return recorded(hits=[])(effect)

    outcome, _ = drive(answer_question(ChatRequest("Wann öffnet der Laden?"), POLICY), german)
    assert outcome.answer == not_found("de")
    assert outcome.language == "de"


def measured(similarity, *texts, heading=(), floor=0.45, languages=("en",)):
    """Hits as search finds them with the local embedder: relevant (over its similarity
    floor, 0.30), ``similarity`` to the question, its measured topic floor (0.45; None:
    an unmeasured, remote embedder), measured for English questions (``languages``)."""
    return [
        RetrievedHit(i, i, f"doc{i}", text, 0.5, heading, vector_rank=i, similarity=similarity,
                     similarity_floor=0.30 if floor else None, topic_floor=floor,
                     topic_floor_languages=languages)
        for i, text in enumerate(texts, start=1)
    ]  # fmt: skip


ABOUT_OTHER_USERS = (
    "The user root has uid 0 and owns the system. The user daemon has uid 1.",
    "Each user has a home directory. It had uid 37.",
)


def test_sources_that_do_not_support_an_answer_are_declined_before_the_model():
    # neither on the question's topic by meaning (0.38 < 0.45) nor covering its words
    # ("nobody" is in no source): the offline answerer's rule, applied before any provider
    hits = measured(0.38, *ABOUT_OTHER_USERS)
    outcome, effects = drive(
        answer_question(ChatRequest("What is the user id of nobody?"), POLICY), recorded(hits=hits)
    )
    assert [type(e) for e in effects] == [Embed, FindOwnerAnswer, SearchChunks]
    assert outcome.answer == not_found("en") and outcome.citations == ()
    assert (outcome.provider, outcome.usage) == (None, None)
    assert outcome.language == "en"


def asked_in_german(hits):
    def german(effect):
        if isinstance(effect, DetectLanguage):
            return [LanguageGuess("de", "German", 0.95)]
        return recorded(hits=hits)(effect)

    return german


def test_an_unsupported_question_is_declined_in_its_language():
    # a topic floor measured for questions in any language
    hits = measured(0.30, *ABOUT_OTHER_USERS, languages=())
    question = "Welche Benutzerkennung hat das Konto nobody?"
    outcome, effects = drive(answer_question(ChatRequest(question), POLICY), asked_in_german(hits))
    assert not any(isinstance(e, Generate) for e in effects)
    assert (outcome.answer, outcome.language) == (not_found("de"), "de")


def test_a_question_in_a_language_the_floor_was_not_measured_in_reaches_the_model():
    # the local MiniLM's floor was measured with English questions: a German one about
    # English pages is far from them by its meaning, and its words are not theirs
    hits = measured(0.30, "Anacron runs the jobs of computers that are not always on.")
    question = "Laufen geplante Aufgaben auf einem oft ausgeschalteten Laptop?"
    _, effects = drive(answer_question(ChatRequest(question), POLICY), asked_in_german(hits))
    assert type(effects[-1]) is Generate
    # in English, the same far hit is declined before the model
    _, effects = drive(
        answer_question(ChatRequest("Do scheduled jobs run on a laptop often off?"), POLICY),
        recorded(hits=hits),
    )
    assert not any(isinstance(e, Generate) for e in effects)


def test_a_source_on_the_questions_topic_reaches_the_model_though_the_words_differ():
    hits = measured(
        0.52, "Root's numeric identifier is 0.", "Daemons run under their own accounts."
    )
    outcome, effects = drive(
        answer_question(ChatRequest("Which number identifies the superuser root?"), POLICY),
        recorded(hits=hits, reply="0 [1]."),
    )
    assert type(effects[-1]) is Generate
    assert (outcome.answer, outcome.provider) == ("0 [1].", "recorded")


def test_words_covered_with_their_heading_reach_the_model_though_the_meaning_is_far():
    hits = measured(0.40, "It exists for daemons. Its user id is 65534.", heading=("nobody",))
    _, effects = drive(
        answer_question(ChatRequest("What is the user id of nobody?"), POLICY), recorded(hits=hits)
    )
    assert type(effects[-1]) is Generate
    assert [s.hit.chunk_id for s in effects[-1].prompt.sources] == [1]


def test_an_unmeasured_embedders_hits_still_reach_the_model():
    # a remote embedder has no measured topic floor: it is trusted, as for relevance
    hits = measured(0.20, *ABOUT_OTHER_USERS, floor=None)
    _, effects = drive(
        answer_question(ChatRequest("What is the user id of nobody?"), POLICY), recorded(hits=hits)
    )
    assert [type(e) for e in effects] == [
        Embed,
        FindOwnerAnswer,
        SearchChunks,
        Generate,
    ]


NGINX = "How do I write an nginx location block with try_files for my PHP site?"
APACHE = [
    Hit(21, 3, "core.html", "A Location block limits directives to the URLs it matches.", 0.9),
    Hit(22, 4, "handlers.html", "Files of PHP pages are passed to their handler.", 0.8),
]


def test_a_name_the_documents_never_mention_is_not_answered_nor_asked_about():
    outcome, effects = drive(answer_question(ChatRequest(NGINX), POLICY), recorded(APACHE))
    assert outcome.answer == not_found("en")
    assert FindMentions(("try_files",)) in effects  # "PHP" is in a source: not looked up
    assert not any(isinstance(e, Generate) for e in effects)


def test_a_name_the_documents_mention_elsewhere_is_answered():
    # the business's own name, say, on a page the search did not bring
    world = recorded(APACHE, mentioned=frozenset({"try_files"}))
    outcome, effects = drive(answer_question(ChatRequest(NGINX), POLICY), world)
    assert outcome.answer.startswith("Within 30 days")
    assert any(isinstance(e, Generate) for e in effects)
