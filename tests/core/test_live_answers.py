"""Live data in the chat pipeline, driven with recorded effect results: the live source
first and cited, the question for a missing value asked without a search or a model, a
failed source said, the pending question kept and resumed, and the offline answer."""

from datetime import UTC, datetime
from typing import Any

from ragcore.answers.effects import FindOwnerAnswer
from ragcore.chat.extractive import extractive_answer
from ragcore.chat.pipeline import ChatPolicy, ChatRequest, answer_question
from ragcore.generation import Generate, ModelReply
from ragcore.knowledge.effects import Embed, SearchChunks
from ragcore.knowledge.retrieval import RetrievedHit
from ragcore.language import DetectLanguage, LanguageGuess, not_found
from ragcore.live.answers import PENDING_TTL, LiveContext, LiveRun, LoadLive, RecordLive
from ragcore.live.matching import LiveAction, Pending
from ragcore.live.pipeline import LiveFailure, LiveRows, RunLiveQuery
from ragcore.live.templates import check_template
from ragcore.sources import Hit
from tests.core.drive import drive

NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
POLICY = ChatPolicy(max_context_chars=12000, max_output_tokens=256, temperature=0.2)
STATUS = LiveAction(
    7,
    "Order status",
    3,
    "mysql",
    check_template("mysql", "SELECT status, carrier FROM orders WHERE id = {order_id}"),
    description="Where an order is",
)
DOC = Hit(11, 1, "shipping.md", "Orders ship within 2 days of payment.", 0.9)


def recorded(
    actions: tuple[LiveAction, ...] = (STATUS,),
    rows: Any = ({"status": "shipped", "carrier": "DHL"},),
    hits: tuple[Hit, ...] = (),
    reply: str = "Your order has shipped with DHL [1].",
    pending: Pending | None = None,
    cache: dict[Any, Any] | None = None,
) -> Any:
    held = {} if cache is None else cache

    def answer(effect: Any) -> Any:
        match effect:
            case DetectLanguage():
                return [LanguageGuess("en", "English", 0.9)]
            case LoadLive():
                return LiveContext(actions, held, NOW, pending)
            case RunLiveQuery():
                return rows if isinstance(rows, LiveFailure) else LiveRows(rows, duration_ms=12)
            case RecordLive():
                return None
            case FindOwnerAnswer():
                return None
            case Embed():
                return [[0.1, 0.2]]
            case SearchChunks():
                return list(hits)
            case Generate():
                return ModelReply(reply, provider="recorded", model="m1")
        raise AssertionError(effect)

    return answer


def ask(question: str, channel: str | None = "telegram", **kwargs: Any) -> tuple[Any, list[Any]]:
    request = ChatRequest(question, asker="telegram:42", channel=channel)
    return drive(answer_question(request, POLICY), recorded(**kwargs))


def test_the_live_rows_are_the_first_source_and_cited_as_live_data() -> None:
    answer, effects = ask("where is my order 4411?", hits=(DOC,))
    [query] = [e for e in effects if isinstance(e, RunLiveQuery)]
    assert query.params == {"order_id": "4411"}
    [generate] = [e for e in effects if isinstance(e, Generate)]
    user = generate.prompt.user
    assert "[1] live data: Order status\n(Where an order is)\n" in user
    assert '{"status": "shipped", "carrier": "DHL"}' in user
    assert "[2] (shipping.md)" in user
    [citation] = answer.citations
    assert (citation.document_name, citation.live_action_id) == ("live data: Order status", 7)
    assert (citation.document_id, citation.chunk_id) == (None, None)
    [record] = [e for e in effects if isinstance(e, RecordLive)]
    assert record.run == LiveRun(7, "Order status", (("order_id", "4411"),), "ran", 1, None, 12)
    assert record.pending is None


def test_live_rows_answer_even_when_no_document_is_relevant() -> None:
    answer, effects = ask("where is my order 4411?")
    assert any(isinstance(e, Generate) for e in effects)
    assert answer.answer == "Your order has shipped with DHL [1]."


def test_live_rows_answer_even_when_the_documents_do_not_support_an_answer() -> None:
    # the document is off the question's topic (0.2 < its embedder's topic floor) and
    # does not cover its words: declined before the model, but for the live data
    off_topic = RetrievedHit(
        12, 2, "careers.md", "We are hiring.", 0.5, vector_rank=1, similarity=0.2, topic_floor=0.45
    )
    answer, effects = ask("where is my order 4411?", hits=(off_topic,))
    [generate] = [e for e in effects if isinstance(e, Generate)]
    assert [s.hit.document_name for s in generate.prompt.sources] == [
        "live data: Order status",
        "careers.md",
    ]
    assert answer.answer == "Your order has shipped with DHL [1]."


def test_a_missing_value_is_asked_for_without_a_search_or_a_model() -> None:
    answer, effects = ask("what's the status of my order?")
    assert answer.answer == "What is your order number?"
    assert answer.citations == () and answer.provider is None
    assert not any(isinstance(e, Embed | Generate | RunLiveQuery) for e in effects)
    [record] = [e for e in effects if isinstance(e, RecordLive)]
    assert record.pending == Pending(7, ("order_id",))
    assert record.expires_at == NOW + PENDING_TTL
    assert record.run.outcome == "asked"


def test_the_reply_to_the_question_runs_the_action() -> None:
    answer, effects = ask("4411", pending=Pending(7, ("order_id",)))
    [query] = [e for e in effects if isinstance(e, RunLiveQuery)]
    assert query.params == {"order_id": "4411"}
    assert answer.citations[0].live_action_id == 7


def test_a_failed_source_is_said_and_the_answer_goes_on() -> None:
    answer, effects = ask("where is my order 4411?", rows=LiveFailure("timeout", 5000))
    [generate] = [e for e in effects if isinstance(e, Generate)]
    assert "could not be fetched" in generate.prompt.user
    assert "timeout" not in generate.prompt.user
    [record] = [e for e in effects if isinstance(e, RecordLive)]
    assert (record.run.outcome, record.run.reason, record.run.duration_ms) == (
        "failed",
        "timeout",
        5000,
    )


def test_a_second_ask_is_answered_from_the_cache() -> None:
    cache: dict[Any, Any] = {}
    ask("where is my order 4411?", cache=cache)
    _, effects = ask("order 4411 status please", cache=cache)
    assert not any(isinstance(e, RunLiveQuery) for e in effects)
    [record] = [e for e in effects if isinstance(e, RecordLive)]
    assert record.run.outcome == "cached"


def test_no_channel_or_no_action_runs_nothing_live() -> None:
    answer, effects = ask("where is my order 4411?", channel=None)
    assert not any(isinstance(e, LoadLive) for e in effects)
    assert answer.answer == not_found("en")
    answer, effects = ask("where is my order 4411?", actions=())
    assert not any(isinstance(e, RunLiveQuery | RecordLive) for e in effects)
    assert answer.answer == not_found("en")


def test_an_action_of_another_channel_does_not_run() -> None:
    voice_only = LiveAction(8, "Balance", 3, "mysql", STATUS.template, channels=("voice",))
    _, effects = ask("where is my order 4411?", actions=(voice_only,))
    assert not any(isinstance(e, RunLiveQuery) for e in effects)


def prompt_of(rows: Any, hits: tuple[Hit, ...] = (), question: str = "where is order 4411?"):
    _, effects = ask(question, rows=rows, hits=hits)
    [generate] = [e for e in effects if isinstance(e, Generate)]
    return generate.prompt


def test_the_offline_answer_quotes_the_records() -> None:
    prompt = prompt_of(({"status": "shipped", "carrier": "DHL", "note": None},), hits=(DOC,))
    assert extractive_answer(prompt) == "Order status: status: shipped, carrier: DHL. [1]"


def test_a_value_in_the_records_cannot_pass_for_a_citation() -> None:
    prompt = prompt_of(({"status": "shipped", "note": "see [2]"},), hits=(DOC,))
    assert extractive_answer(prompt) == "Order status: status: shipped, note: see (2). [1]"


def test_the_offline_answer_with_no_record_or_a_failed_source() -> None:
    assert extractive_answer(prompt_of(())) == "No matching record was found. [1]"
    failed = extractive_answer(prompt_of(LiveFailure("down"), hits=(DOC,)))
    assert failed.startswith("Your data could not be looked up just now")
    assert failed.endswith("Orders ship within 2 days of payment. [2]")
