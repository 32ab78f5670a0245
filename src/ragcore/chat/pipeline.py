"""The chat pipeline: embed the question, find the owner's answer to it (served as it
is when close enough: ``ragcore.answers.matching``), search, trim, generate, check
citations.

Written as a generator of effects (see ``ragcore.effects``): it yields what it
needs and returns a ``ChatAnswer``. The runner in ragio executes the effects;
``tests/core`` answers them with recorded results.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Annotated, Any, Literal, TypeAlias

import attrs

from ragcore.actions.autonomy import ActingRole, AutonomyConfig
from ragcore.actions.effects import LoadAutonomy
from ragcore.actions.flow import ActionPolicy, Submission, SubmitEffect, submit_action
from ragcore.actions.proposals import (
    Offer,
    offer_for,
    proposal_instructions,
    read_proposal,
    split_proposal,
)
from ragcore.actions.records import ProposedAction
from ragcore.answers.effects import FindOwnerAnswer
from ragcore.answers.matching import OwnerAnswerMatch, owner_hit
from ragcore.chat.citations import Citation, citation_of, resolve_citations
from ragcore.chat.followup import (
    REWRITE_OUTPUT_TOKENS,
    REWRITE_TEMPERATURE,
    Exchange,
    history_block,
    is_follow_up,
    read_rewrite,
    rewrite_prompt,
    standalone_by_rule,
)
from ragcore.chat.grounding import (
    CHECK_OUTPUT_TOKENS,
    CHECK_TEMPERATURE,
    QUOTING_PROVIDERS,
    check_prompt,
    parse_verdict,
    with_caveat,
)
from ragcore.chat.prompts import build_prompt
from ragcore.chat.reasoning import final_answer
from ragcore.chat.small_talk import small_talk
from ragcore.chat.support import supports_answer, unnamed, words
from ragcore.chat.translation import (
    COMPOUNDING,
    DICTIONARIES,
    EMBED_TRANSLATIONS,
    MIN_PART,
    TranslateWords,
    compound_parts,
    compound_translations,
    question_terms,
    search_text,
)
from ragcore.employees.layering import role_instructions
from ragcore.employees.learning import LearnEffect, LearningPolicy, interaction, learn_from
from ragcore.employees.memory import RoleContextEffect, role_context
from ragcore.employees.roles import Role
from ragcore.employees.sensitivity import Sensitivity, assess_sensitivity
from ragcore.errors import InvalidInput, check_text
from ragcore.generation import GROUNDING_INSTRUCTIONS, Generate, ModelReply
from ragcore.handoff.policy import HandoffPolicy
from ragcore.knowledge.effects import Embed, FindMentions, SearchChunks
from ragcore.knowledge.graph import ReachGraph
from ragcore.knowledge.graph_rules import GraphPolicy, graph_ranked
from ragcore.knowledge.retrieval import relevant_hits
from ragcore.language import (
    DetectLanguage,
    LanguagePolicy,
    asked_in,
    choose_language,
    needs_detecting,
    not_found,
)
from ragcore.live.answers import LiveDataEffect, live_data
from ragcore.live.pipeline import AskFor, LiveData, LiveFailed, LiveOutcome, NoMatch, live_hit
from ragcore.metering import MeteredEffect, metered_generate
from ragcore.schema import described
from ragcore.settings import Settings
from ragcore.sources import Hit, Source, number_sources, trim_hits
from ragcore.usage import (
    LIMIT_REACHED,
    MIN_ANSWER_TOKENS,
    Capped,
    Caps,
    CheckBudget,
    TokenUsage,
    estimate_tokens,
    measured_usage,
)

#: what answering a question asks for, its sub-pipelines' effects included: the budget,
#: the language, live data, the standalone question and every other model call
#: (metered), retrieval, the role's context, the action it may propose, and learning
ChatEffect: TypeAlias = (
    CheckBudget
    | DetectLanguage
    | TranslateWords
    | LiveDataEffect
    | MeteredEffect
    | Embed
    | FindOwnerAnswer
    | ReachGraph
    | SearchChunks
    | FindMentions
    | RoleContextEffect
    | LoadAutonomy
    | SubmitEffect
    | LearnEffect
)

MAX_QUESTION_CHARS = 4000
SEARCH_LIMIT = 8
#: Whether a name the question gives ("try_files", "QuickBooks", "PHP-FPM":
#: ``ragcore.chat.support.names_of``) that no source holds must be mentioned elsewhere in
#: the documents (``FindMentions``: the business's own name on its "about" page) for
#: the sources to support an answer, whatever their meaning and other words: an answer
#: from Apache's manual does not answer a question about nginx's. Yes: unanswerable
#: questions declined +30 points on two sets (Apache 50 → 80 %, GnuCash 30 → 60 %),
#: nothing else moved on any set (``scripts/eval_loco.py --grid names``).
NAMES_MUST_BE_FOUND = True


@attrs.frozen
class ChatRequest:
    """A question, answered as ``employee`` when given.

    ``employee`` is the stored role the runner looked up (runtime roles included; an
    unknown role never gets this far). ``role`` is its identifier, which the usage ledger
    counts under; it defaults to the employee's. A ``role`` without its ``employee`` is a
    programming error once the answer would be generated: the role is never dropped
    silently.
    """

    question: str
    role: str | None = None
    employee: Role | None = None
    #: who asked (a channel's user, or ``user`` on /chat): learning counts people, not
    #: questions (``ragcore.employees.learning``); None is the anonymous API user
    asker: str | None = None
    #: where the conversation is, for actions the role's reply may propose
    #: (``ragcore.actions.proposals``): ``chat`` (POST /chat) or a channel name
    #: (``telegram``, ``whatsapp``, ``discord``, ``web``: a customer's conversation,
    #: ``ragcore.channel_names.CUSTOMER_CHANNELS``). None: the role is not offered any action
    origin: str | None = None
    #: the answer will be said aloud on a phone call: short and sayable
    spoken: bool = False
    #: where the question was asked, for live-data actions (``ragcore.live``): one of
    #: ``ragcore.channel_names.ASKING_CHANNELS``; None runs none (the CLI)
    channel: str | None = None
    #: who the channel says is asking, for ``{caller}``: the caller's or the WhatsApp
    #: sender's phone number, a Telegram or Discord user id, /chat's ``user``, the
    #: widget visitor's verified user id (None when not verified)
    user_identifier: str | None = None
    #: the conversation so far, oldest first: a follow-up is searched as a standalone
    #: question (``ragcore.chat.followup``) and the model sees the latest exchanges
    history: tuple[Exchange, ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.employee is not None and self.role is None:
            object.__setattr__(self, "role", self.employee.identifier)


@attrs.frozen
class ChatPolicy:
    """The settings the pipeline obeys."""

    max_context_chars: int
    max_output_tokens: int
    temperature: float
    search_limit: int = SEARCH_LIMIT
    usage_ledger: bool = False
    caps: Caps = Caps()
    language: LanguagePolicy = LanguagePolicy()
    sensitive_extra: tuple[str, ...] = ()  # SENSITIVE_ROLES_EXTRA
    reviewed_safe: tuple[str, ...] = ()  # SENSITIVE_ROLES_REVIEWED_SAFE
    learning: LearningPolicy | None = LearningPolicy()  # None: roles learn nothing
    actions: ActionPolicy | None = None  # None: no action is ever proposed
    #: a language model answers (not only the offline answerer): it rewrites follow-ups
    rewrite_with_model: bool = False
    graph: GraphPolicy | None = None  # None: the knowledge graph is off
    handoff: HandoffPolicy = HandoffPolicy()

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatPolicy:
        return cls(
            max_context_chars=settings.max_context_chars,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.default_temperature,
            usage_ledger=settings.usage_ledger,
            caps=Caps.from_settings(settings),
            language=LanguagePolicy(
                default=settings.default_language,
                threshold=settings.language_detection_confidence_threshold,
                supported=settings.language_detection_supported_languages,
            ),
            sensitive_extra=tuple(settings.sensitive_roles_extra),
            reviewed_safe=tuple(settings.sensitive_roles_reviewed_safe),
            actions=ActionPolicy.from_settings(settings),
            graph=GraphPolicy.from_settings(settings),
            handoff=HandoffPolicy.from_settings(settings),
        )

    def sensitivity(self, role: Role) -> Sensitivity:
        """Rule 13 for ``role`` under these settings."""
        return assess_sensitivity(role, self.sensitive_extra, self.reviewed_safe)


@attrs.frozen
class ChatAnswer:
    """The answer to a question, with the passages it cites (POST /chat)."""

    answer: str
    citations: tuple[Citation, ...]
    role: str | None
    provider: str | None  # None when no provider was asked
    model: str | None
    usage: TokenUsage | None = None  # None when no provider was asked
    limited: Annotated[bool, described("true when a token budget stopped the request")] = False
    language: Annotated[str | None, described("ISO 639-1 code of the answer's language")] = None
    grounded: Annotated[
        bool | None,
        described(
            "a sensitive role's grounding check: false adds a caveat to the answer; null when no "
            "check ran"
        ),
    ] = None
    check_usage: Annotated[
        TokenUsage | None,
        described(
            "tokens of the grounding check's own call (usage is the answer's); null when no judge "
            "was asked"
        ),
    ] = None
    action: Annotated[
        ProposedAction | None,
        described(
            "the outbound action the role's reply proposed, after the gate; null when none was "
            "proposed (or the proposal was dropped)"
        ),
    ] = None
    search_question: Annotated[
        str | None,
        described(
            "the standalone question searched for a follow-up (the conversation's earlier "
            "question joined in, or the model's rewrite); null when the question was searched "
            "as asked"
        ),
    ] = None
    conversation_id: Annotated[
        int | None,
        described("the conversation this turn was recorded in; pass it back to follow up"),
    ] = None
    turn: Annotated[
        int | None,
        described(
            "the turn's number in its conversation (feedback on it: POST "
            "/conversations/{id}/turns/{turn}/feedback); null when it was not recorded"
        ),
    ] = None
    mode: Annotated[
        Literal["ai", "human", "closed"],
        described(
            "the conversation's mode after this turn: human when a person answers from now "
            "on (this turn handed it over, or a person was answering already: see held)"
        ),
    ] = "ai"
    held: Annotated[
        bool,
        described(
            "true when the AI gave no answer: a person answers this conversation, and the "
            "message waits for them"
        ),
    ] = False


def check_question(question: Any) -> str:
    """The question, stripped; InvalidInput when missing, blank or too long."""
    if question is None:
        raise InvalidInput("question", "is required")
    return check_text(question, "question", MAX_QUESTION_CHARS)


def answer_question(
    request: ChatRequest, policy: ChatPolicy
) -> Generator[ChatEffect, Any, ChatAnswer]:
    """The grounded answer, metered by the usage ledger and held to the budgets (rule 14):
    a request that could not fit even its least prompt under a cap asks no provider at all
    (``CheckBudget``); the model call is held to the caps itself (``metered_generate``).
    A greeting, a thank-you or a goodbye alone gets a short reply (``small_talk``)."""
    question = check_question(request.question)
    if (talk := small_talk(question, policy.language)) is not None:
        return ChatAnswer(talk.reply, (), request.role, None, None, language=talk.language)
    if policy.usage_ledger and policy.caps.any:
        least = estimate_tokens(GROUNDING_INSTRUCTIONS + question) + MIN_ANSWER_TOKENS
        decision = yield CheckBudget(request.role, least, policy.caps)
        if isinstance(decision, Capped):
            return limited(request)
    return (yield from _grounded_answer(question, request, policy))


def translated_words(
    question: str, language: str | None
) -> Generator[ChatEffect, Any, dict[str, tuple[str, ...]]]:
    """The English translations of the words of a question asked in a language a
    dictionary translates (``ragcore.chat.translation``), a compound's by its parts;
    none for the others."""
    if language is None or language not in DICTIONARIES:
        return {}
    asked = tuple(dict.fromkeys(words(question)))
    if not asked:
        return {}
    found: dict[str, tuple[str, ...]] = yield TranslateWords(language, asked)
    unknown = [w for w in asked if w not in found and len(w) >= 2 * MIN_PART]
    if unknown and language in COMPOUNDING:
        parts = tuple(dict.fromkeys(p for word in unknown for p in compound_parts(word)))
        known: dict[str, tuple[str, ...]] = yield TranslateWords(language, parts)
        for word in unknown:
            if translated := compound_translations(word, known):
                found = {**found, word: translated}
    return found


def limited(request: ChatRequest) -> ChatAnswer:
    return ChatAnswer(LIMIT_REACHED, (), request.role, None, None, limited=True)


def _grounded_answer(
    question: str, request: ChatRequest, policy: ChatPolicy
) -> Generator[ChatEffect, Any, ChatAnswer]:
    guesses = (yield DetectLanguage(question)) if needs_detecting(question, policy.language) else ()
    language = choose_language(guesses, policy.language, question)
    question_language = asked_in(question, guesses, policy.language)
    live: LiveOutcome = NoMatch()
    if request.channel is not None:
        live = yield from live_data(
            request.channel, request.asker, request.user_identifier, question, language
        )
        if isinstance(live, AskFor):  # a value is missing: ask for it, nothing ran
            return ChatAnswer(live.question, (), request.role, None, None, language=live.language)
    asked = question
    question = yield from standalone_question(asked, request, policy, language)
    searched = question if question != asked else None
    translations = yield from translated_words(question, question_language)
    terms = question_terms(question, translations) if translations else None
    searched_text = search_text(question, translations)
    [vector] = yield Embed((question,), purpose="query")
    search_vector = vector
    if EMBED_TRANSLATIONS and translations:
        [search_vector] = yield Embed((searched_text,), purpose="query")
    # The owner's answer to this question, if they wrote one: served as it is, it costs no
    # model call and no token (live data, the customer's own records, still comes first).
    owner = yield FindOwnerAnswer(question, tuple(vector))
    if (
        owner is not None
        and owner.serves(question_language)
        and not isinstance(live, LiveData | LiveFailed)
    ):
        return served_from(owner, request, language, searched)
    graph: tuple[int, ...] = ()
    if policy.graph is not None:
        graph = yield from graph_ranked(question, policy.graph, policy.search_limit)
    hits: list[Hit] = yield SearchChunks(
        tuple(search_vector),
        searched_text,
        policy.search_limit,
        graph_chunk_ids=graph,
        graph_weight=policy.graph.weight if policy.graph is not None else 0.0,
    )
    relevant = relevant_hits(hits)
    if owner is not None and owner.informs(question_language):
        relevant = [owner_hit(owner), *relevant]  # the owner's answer first: they wrote it
    kept = trim_hits(relevant, policy.max_context_chars)
    live_source = live_hit(live)
    # the live data first: it is what the customer asked about
    sources = number_sources([live_source, *kept] if live_source is not None else kept)
    if live_source is None and not (
        kept
        and supports_answer(question, sources, question_language, terms)
        and (yield from names_found(question, sources))
    ):
        # Nothing relevant to ground an answer on (see ragcore.knowledge.retrieval), or
        # nothing that supports one by its meaning or its words (ragcore.chat.support,
        # the offline answerer's rule): say so without spending a provider call. Live
        # data is always an answer.
        return ChatAnswer(
            not_found(language),
            (),
            request.role,
            None,
            None,
            language=language,
            search_question=searched,
        )
    context_text = ""
    if request.employee is not None:
        # the same pipeline GET /employees/{role}/context runs, with the question's vector
        context = yield from role_context(request.employee.identifier, question, vector)
        context_text = context.text
    offer, autonomy = yield from action_offer(request, policy)
    block = role_block(request, policy, context_text, offer)
    shown_live = live if isinstance(live, LiveData | LiveFailed) else None
    prompt = build_prompt(
        question,
        sources,
        language,
        block,
        spoken=request.spoken,
        live=shown_live,
        history=history_block(request.history) if request.history else "",
        terms=terms,
    )
    sensitive = is_sensitive(request, policy)
    generate = Generate(
        prompt,
        max_output_tokens=policy.max_output_tokens,
        temperature=policy.temperature,
        # reasoning mode: shown only when whole and checked; a proposal: never shown
        stream=not sensitive and offer is None,
    )
    reply = yield from metered_generate(
        generate,
        request.role,
        policy.caps,
        policy.usage_ledger,
        min_output_tokens=MIN_ANSWER_TOKENS,
    )
    if isinstance(reply, Capped):
        return limited(request)
    shown, proposal = split_proposal(reply.text) if offer is not None else (reply.text, None)
    written = final_answer(shown) if sensitive else shown
    text, citations = resolve_citations(written, sources)
    usage = measured_usage(reply.usage, prompt.system + prompt.user, reply.text)
    grounded, check_usage = None, None
    if sensitive:
        grounded, check_usage = yield from check_grounding(
            question, sources, text, reply, request, policy
        )
        if not grounded:
            text = with_caveat(text, language)
    proposed = None
    if offer is not None and autonomy is not None:
        proposed = yield from propose(request, policy, offer, autonomy, proposal)
    if policy.learning is not None:
        cited = [
            c.document_name
            for c in citations
            if c.live_action_id is None and c.owner_answer_id is None
        ]
        record = interaction(request.role, request.asker, question, vector, cited, grounded)
        if record is not None:
            yield from learn_from(record, policy.learning)
    return ChatAnswer(
        text,
        citations,
        request.role,
        reply.provider,
        reply.model,
        usage=usage,
        language=language,
        grounded=grounded,
        check_usage=check_usage,
        action=proposed,
        search_question=searched,
    )


def names_found(question: str, sources: Sequence[Source]) -> Generator[ChatEffect, Any, bool]:
    """Whether the documents mention every name ``question`` gives (``unnamed``): in the
    sources, or elsewhere."""
    missing = unnamed(question, sources) if NAMES_MUST_BE_FOUND else []
    if not missing:
        return True
    mentioned: frozenset[str] = yield FindMentions(tuple(missing))
    return set(missing) <= mentioned


def served_from(
    owner: OwnerAnswerMatch, request: ChatRequest, language: str, searched: str | None = None
) -> ChatAnswer:
    """The owner's answer as the answer, citing it; no provider was asked."""
    return ChatAnswer(
        owner.answer,
        (citation_of(Source(1, owner_hit(owner))),),
        request.role,
        None,
        None,
        language=language,
        search_question=searched,
    )


def standalone_question(
    question: str, request: ChatRequest, policy: ChatPolicy, language: str
) -> Generator[MeteredEffect, Any, str]:
    """The question to search: as asked, unless it is a follow-up that leans on the
    conversation (``is_follow_up``: a cheap test, so that a question standing alone costs
    no call); then the model's standalone rewrite when a model answers (metered like every
    call, rule 14), else, or when the model fails or a cap stops it,
    ``standalone_by_rule``."""
    history = request.history
    if not is_follow_up(question, history):
        return question
    if policy.rewrite_with_model:
        rewrite = Generate(
            rewrite_prompt(question, history, language),
            max_output_tokens=REWRITE_OUTPUT_TOKENS,
            temperature=REWRITE_TEMPERATURE,
            task="rewrite",
            stream=False,
        )
        try:
            reply = yield from metered_generate(
                rewrite, request.role, policy.caps, policy.usage_ledger
            )
        except Exception:  # noqa: BLE001 (no rewrite: the rule's is searched)
            reply = None
        if isinstance(reply, ModelReply):
            return read_rewrite(reply.text, question)
    return standalone_by_rule(question, history)


def action_offer(
    request: ChatRequest, policy: ChatPolicy
) -> Generator[LoadAutonomy, Any, tuple[Offer | None, AutonomyConfig | None]]:
    """What the answering role may propose here, and the autonomy setting it was read
    under: nothing without an origin, a role, or a configured kind the owner allows."""
    actions = policy.actions
    if request.origin is None or request.employee is None or actions is None:
        return None, None
    if not actions.catalog.configured_kinds():
        return None, None
    autonomy: AutonomyConfig = yield LoadAutonomy()
    return offer_for(actions.catalog, autonomy, acting_role(request, policy)), autonomy


def acting_role(request: ChatRequest, policy: ChatPolicy) -> ActingRole | None:
    if request.employee is None:
        return None
    employee = request.employee
    return ActingRole(employee.identifier, employee.autonomy, policy.sensitivity(employee))


def propose(
    request: ChatRequest,
    policy: ChatPolicy,
    offer: Offer,
    autonomy: AutonomyConfig,
    proposal: str | None,
) -> Generator[SubmitEffect, Any, ProposedAction | None]:
    """The reply's proposal, if it is a valid one on offer, through the gate."""
    assert policy.actions is not None and request.origin is not None
    action = read_proposal(proposal, offer, policy.actions.catalog)
    if action is None:
        return None
    submission = Submission(action, request.origin, acting_role(request, policy))
    record = yield from submit_action(submission, policy.actions, autonomy)
    return ProposedAction.of(record)


def is_sensitive(request: ChatRequest, policy: ChatPolicy) -> bool:
    """Rule 13 for the role answering: reasoning mode and the grounding check apply."""
    return request.employee is not None and policy.sensitivity(request.employee).sensitive


def check_allowance(policy: ChatPolicy) -> int:
    """Output tokens the grounding check's judge may use (see CHECK_OUTPUT_TOKENS)."""
    return max(policy.max_output_tokens, CHECK_OUTPUT_TOKENS)


def check_grounding(
    question: str,
    sources: tuple[Source, ...],
    answer: str,
    reply: ModelReply,
    request: ChatRequest,
    policy: ChatPolicy,
) -> Generator[MeteredEffect, Any, tuple[bool, TokenUsage | None]]:
    """The grounding check of ``answer`` (``ragcore.chat.grounding``): the verdict and the
    judge's tokens. The judge's call is metered as a call of its own (rule 14). Quoted
    answers pass without a judge; an empty answer, a judge that cannot be reached or is
    stopped by a budget, or an unclear verdict fail (fail closed)."""
    if reply.provider in QUOTING_PROVIDERS:
        return True, None
    if not answer.strip():
        return False, None
    judge = Generate(
        check_prompt(question, sources, answer),
        max_output_tokens=check_allowance(policy),
        temperature=CHECK_TEMPERATURE,
        task="check",
        stream=False,
    )
    try:
        verdict = yield from metered_generate(judge, request.role, policy.caps, policy.usage_ledger)
    except Exception:  # noqa: BLE001 (no judge: the answer goes out with the caveat)
        return False, None
    if not isinstance(verdict, ModelReply):  # a cap: the judge is not asked
        return False, None
    prompt = judge.prompt
    usage = measured_usage(verdict.usage, prompt.system + prompt.user, verdict.text)
    return parse_verdict(verdict.text), usage


def role_block(
    request: ChatRequest, policy: ChatPolicy, context_text: str = "", offer: Offer | None = None
) -> str:
    """The role's instructions, layered after the grounding rules (rule 1); empty without
    a role (rule 2). ``context_text`` is the role context (``ragcore.employees.memory``:
    owner instructions, business profile, learned patterns). A sensitive role also gets
    the reasoning-mode instructions, and a role offered actions what it may propose."""
    if request.employee is None:
        if request.role is not None:
            raise ValueError(f"role {request.role!r} given without the stored role to answer as")
        return ""
    employee = request.employee
    proposals = proposal_instructions(offer) if offer is not None else ""
    return role_instructions(
        employee, context_text, sensitivity=policy.sensitivity(employee), proposals=proposals
    )
