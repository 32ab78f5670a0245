"""The owner's answers in the core: when one is served, given as a source or left out;
the FAQ read by line; which questions are gaps, and which groups an answer covers."""

from datetime import UTC, datetime, timedelta

import pytest

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.answers.faq import FaqInvalid, faq_format, read_faq
from ragcore.answers.matching import (
    OWNER_ANSWER_NAME,
    OwnerAnswerMatch,
    Thresholds,
    answer_language,
    normalized,
    thresholds,
)
from ragcore.chat.followup import Exchange
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.generation import Generate
from ragcore.insights.groups import AnswerQuestion, AskedQuestion, gap_reason, group_questions
from ragcore.knowledge.effects import Embed, SearchChunks
from ragcore.language import LanguageGuess
from ragcore.sources import Hit
from tests.core.drive import drive
from tests.core.test_chat_pipeline import recorded

POLICY = ChatPolicy(max_context_chars=12000, max_output_tokens=256, temperature=0.2)
MEASURED = Thresholds(serve=0.8, source=0.55)
HOURS = "We are open 9 am to 6 pm, Monday to Saturday."


def match(similarity: float, exact: bool = False, measured=MEASURED) -> OwnerAnswerMatch:
    return OwnerAnswerMatch(7, 2, HOURS, "When are you open?", similarity, exact, measured)


def with_owner(found: OwnerAnswerMatch | None, hits=(Hit(11, 1, "a.md", "Text.", 0.9),)):
    base = recorded(hits=list(hits))

    def answer(effect):
        if isinstance(effect, FindOwnerAnswer):
            return found
        return base(effect)

    return answer


def test_a_close_question_is_served_the_owner_answer_with_no_search_and_no_model():
    outcome, effects = drive(
        answer_question(ChatRequest("What time do you open?"), POLICY), with_owner(match(0.86))
    )
    assert [type(e) for e in effects] == [Embed, FindOwnerAnswer]
    assert outcome.answer == HOURS and outcome.provider is None and outcome.usage is None
    [citation] = outcome.citations
    assert (citation.document_name, citation.owner_answer_id) == (OWNER_ANSWER_NAME, 7)
    assert (citation.document_id, citation.chunk_id) == (None, None)


def test_a_less_close_question_gets_it_as_the_first_source():
    outcome, effects = drive(
        answer_question(ChatRequest("How late are you open?"), POLICY), with_owner(match(0.7))
    )
    [generate] = [e for e in effects if isinstance(e, Generate)]
    first, second = generate.prompt.sources
    assert first.hit.owner_answer_id == 7 and first.hit.text == HOURS
    assert second.hit.document_name == "a.md"
    assert outcome.citations[0].owner_answer_id == 7  # the model cited [1]


def test_a_far_question_leaves_it_out():
    _, effects = drive(
        answer_question(ChatRequest("Do you sell shoes?"), POLICY), with_owner(match(0.3))
    )
    [generate] = [e for e in effects if isinstance(e, Generate)]
    assert [s.hit.owner_answer_id for s in generate.prompt.sources] == [None]


def test_with_nothing_retrieved_a_near_owner_answer_still_reaches_the_model():
    outcome, effects = drive(
        answer_question(ChatRequest("How late are you open tonight?"), POLICY),
        with_owner(match(0.7), hits=()),
    )
    assert any(isinstance(e, Generate) for e in effects)
    assert outcome.provider == "recorded"


@pytest.mark.parametrize("exact, served", [(True, True), (False, False)])
def test_an_unmeasured_embedder_serves_only_word_for_word(exact, served):
    found = match(0.99, exact=exact, measured=None)
    assert found.serves("en") is served
    assert found.informs("en") is not served  # the nearest is a source whatever its similarity


def test_an_answer_in_another_language_is_given_to_the_model_to_translate():
    german = OwnerAnswerMatch(
        7, 1, "Wir öffnen um 9 Uhr.", "Wann öffnet ihr?", 0.95, True, MEASURED, "de"
    )
    assert german.serves("de") and not german.serves("en")
    assert german.serves(None)  # the question's language not surely known
    assert german.informs("en") and not german.informs("de")
    outcome, effects = drive(
        answer_question(ChatRequest("When do you open in the morning?"), POLICY), with_owner(german)
    )
    [generate] = [e for e in effects if isinstance(e, Generate)]
    assert generate.prompt.sources[0].hit.text == "Wir öffnen um 9 Uhr."
    assert outcome.provider == "recorded"


def test_a_follow_up_is_matched_as_the_question_it_stands_for():
    request = ChatRequest(
        "and on saturdays?", history=(Exchange("When do you open on weekdays?", "At 9 [1]."),)
    )
    _, effects = drive(answer_question(request, POLICY), with_owner(None))
    [find] = [e for e in effects if isinstance(e, FindOwnerAnswer)]
    [search] = [e for e in effects if isinstance(e, SearchChunks)]
    assert find.question == search.text != "and on saturdays?"


def test_the_local_embedder_has_measured_thresholds():
    assert thresholds("local", "all-MiniLM-L6-v2-onnx-int8") is not None
    assert thresholds("openai", "text-embedding-3-small") is None


def test_questions_match_word_for_word_whatever_the_case_spacing_and_punctuation():
    assert normalized("  When  are you OPEN?? ") == normalized("when are you open")
    assert normalized("Où est l'entrée ?") == "où est l'entrée"


# ---------------------------------------------------------------- the FAQ


def test_a_csv_faq_gives_one_entry_a_row_with_its_line():
    text = (
        "Question,Answer,Notes\n"
        '"When are you open?\nWhat are your hours?","9 to 6, Monday\nto Saturday.",x\n'
        "\n"
        "Do you deliver?,Yes.\n"
    )
    first, second = read_faq(text, "csv")
    assert (first.line, first.questions) == (2, ("When are you open?", "What are your hours?"))
    assert first.answer == "9 to 6, Monday\nto Saturday."
    assert (second.line, second.questions, second.answer) == (6, ("Do you deliver?",), "Yes.")


def test_every_malformed_entry_is_named_by_its_line():
    text = """[
 {"question": "A?", "answer": "a"},
 7,
 {"question": "a", "answer": ""},
 {"question": "B?", "questions": ["C?"], "answer": "b"},
 {"question": "B?", "answer": "b", "tags": []}
]"""
    with pytest.raises(FaqInvalid) as refused:
        read_faq(text, "json")
    assert [(p.line, p.detail) for p in refused.value.problems] == [
        (3, 'must be an object: {"question": "…", "answer": "…"}'),
        (4, "answer must be the answer, as text"),
        (5, 'needs "question" (one) or "questions" (a list), not both'),
        (6, "has unknown field(s): tags"),
    ]


def test_a_question_claimed_twice_and_broken_files_are_refused():
    with pytest.raises(FaqInvalid) as twice:
        read_faq("question,answer\nA?,a\nb,b\n a? ,c\n", "csv")
    assert [(p.line, p.detail) for p in twice.value.problems] == [(4, "'a?' is also on line 2")]
    for text, kind, detail in (
        ("", "csv", 'needs a header row with a "question" and an "answer" column'),
        ("question,answer\n", "csv", "has no answers"),
        ("{}", "json", "must be a JSON array of answers"),
        ('[{"question": "A?", "answer": "a"}', "json", 'is not JSON: expected "," or "]"'),
        ('[{"question": "A?", "answer": "a"}] x', "json", "has text after the array"),
    ):
        with pytest.raises(FaqInvalid) as broken:
            read_faq(text, kind)
        assert broken.value.problems[0].detail == detail


def test_the_format_comes_from_the_name_or_the_media_type():
    assert faq_format("FAQ.CSV") == "csv" and faq_format("x", "application/json") == "json"
    assert faq_format("faq.txt") is None


# ---------------------------------------------------------------- the gaps

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


def asked(question, outcome="not_found", feedback=None, minutes=0, channel="web", conv=1):
    at = NOW + timedelta(minutes=minutes)
    return AskedQuestion(question, channel, at, conv, outcome, feedback)


@pytest.mark.parametrize(
    "question, outcome, feedback, reason",
    [
        ("Is there parking?", "not_found", None, "not_found"),
        ("Is there parking?", "answered", "down", "disliked"),
        ("Is there parking?", "answered", "up", None),
        ("My parcel never came", "to_person", None, "handed_off"),
        ("My parcel never came", "handed_off", None, "handed_off"),
        ("Can I talk to a person please?", "handed_off", None, None),
    ],
)
def test_which_questions_are_gaps(question, outcome, feedback, reason):
    assert gap_reason(asked(question, outcome, feedback)) == reason


def test_groups_are_summed_up_most_asked_first_and_covered_by_an_owner_answer():
    questions = [
        asked("Is there parking?", minutes=1, channel="web", conv=1),
        asked("Gift cards?", minutes=2, channel="chat", conv=2),
        asked("Where do I park?", "answered", "down", minutes=3, channel="telegram", conv=3),
        asked("is there parking", minutes=4, channel="web", conv=1),
    ]
    vectors = [[1, 0.1], [0, 1], [1, 0], [1, 0.1]]
    parking, gifts = group_questions(questions, vectors, threshold=0.9)
    assert parking.count == 3 and parking.last_seen == NOW + timedelta(minutes=4)
    assert parking.examples == ("is there parking", "Where do I park?")  # one each, latest first
    assert parking.channels == ("telegram", "web") and parking.conversations == (1, 3)
    assert parking.reasons == {"not_found": 2, "disliked": 1, "handed_off": 0}
    assert gifts.question == "Gift cards?" and not gifts.answered

    by_words = [AnswerQuestion(5, "gift cards", None)]
    _, gifts = group_questions(questions, vectors, by_words, None, threshold=0.9)
    assert gifts.answer_id == 5
    near = [AnswerQuestion(6, "other words", [0.99, 0.05])]
    parking, _ = group_questions(questions, vectors, near, 0.95, threshold=0.9)
    assert parking.answer_id == 6
    parking, _ = group_questions(questions, vectors, near, None, threshold=0.9)
    assert parking.answer_id is None  # unmeasured: word for word only


def test_an_answer_language_is_told_by_its_function_words_or_a_very_sure_guess():
    command = "Avec a2enmod <module> puis systemctl reload apache2 ; a2dismod désactive un module."
    assert answer_language(command, [LanguageGuess("eo", "Esperanto", 0.75)]) is None
    assert answer_language("Wir öffnen um 9 Uhr und schließen um 18 Uhr.", []) == "de"
    assert answer_language("9-18h", [LanguageGuess("fr", "French", 0.95)]) == "fr"
