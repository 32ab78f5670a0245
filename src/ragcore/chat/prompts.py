"""The chat answer's prompt, built around the numbered sources: the grounding
instructions (``ragcore.generation``), the answer's language and the role's block."""

from __future__ import annotations

from ragcore.generation import GROUNDING_INSTRUCTIONS, LiveSaid, Prompt
from ragcore.language import language_name
from ragcore.live.pipeline import LiveData, LiveFailed, offline_live_answer
from ragcore.sources import Source

# the voice channel: what is said must be short and sayable
SPOKEN_INSTRUCTIONS = """\
- The answer is read aloud on a phone call: at most three short sentences in plain \
words, no lists, tables, markdown or web addresses; still cite every fact as [n]."""

# Rule 3: appended to the question sent to generation, never to the text embedded or searched.
REMINDER = "(Answer only from the numbered sources above and cite them as [n].)"


def build_prompt(
    question: str,
    sources: tuple[Source, ...],
    language: str = "en",
    role_block: str = "",
    *,
    spoken: bool = False,
    live: LiveData | LiveFailed | None = None,
    history: str = "",
    terms: tuple[frozenset[str], ...] | None = None,
) -> Prompt:
    """The prompt for ``question`` over ``sources``. The system message is the grounding
    instructions, intact, then the language line, then ``role_block`` when answering as a
    role (``ragcore.employees.layering.role_instructions``): layered on top, never instead.
    ``spoken``: the answer will be said on a call (``SPOKEN_INSTRUCTIONS``); ``live``:
    the live data one of the sources holds (``ragcore.live.pipeline.live_hit``);
    ``history``: the conversation so far (``ragcore.chat.followup.history_block``), shown
    after the sources and before the question; ``terms``: the question's words with
    their translations, for the offline answerer (``Prompt.terms``)."""
    blocks = [_source_block(source) for source in sources]
    conversation = f"\n\n{history}" if history else ""
    user = (
        "Sources:\n\n"
        + "\n\n".join(blocks)
        + f"{conversation}\n\nQuestion: {question}\n\n{REMINDER}"
    )
    system = f"{GROUNDING_INSTRUCTIONS}\n- Write the answer in {language_name(language)}."
    if spoken:
        system = f"{system}\n{SPOKEN_INSTRUCTIONS}"
    if role_block.strip():
        system = f"{system}\n\n{role_block.strip()}"
    live_said = _live_said(sources, language, live)
    return Prompt(system, user, question, sources, language, live_said, terms)


def _live_said(
    sources: tuple[Source, ...], language: str, live: LiveData | LiveFailed | None
) -> LiveSaid | None:
    """What the offline answerer says of ``live``, cited as the first live source's number;
    None without live data or without a source holding it."""
    numbers = [source.number for source in sources if source.hit.live_action_id is not None]
    if live is None or not numbers:
        return None
    return LiveSaid(offline_live_answer(live, numbers[0], language), isinstance(live, LiveData))


def _source_block(source: Source) -> str:
    hit = source.hit
    if hit.live_action_id is not None:  # as ragcore.live.pipeline.live_source_text
        return f"[{source.number}] {hit.document_name}\n{hit.text}"
    where = " > ".join((hit.document_name, *hit.heading_path))
    return f"[{source.number}] ({where})\n{hit.text}"
