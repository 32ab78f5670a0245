"""/answers: the owner's answers, written, edited, withdrawn and imported from an FAQ
(ragio.answers.store); /insights: what customers asked that was not answered well, and
what they ask most (ragio.answers.insights)."""

from __future__ import annotations

from quart import Blueprint, request

from ragcore.answers.faq import FaqInvalid
from ragcore.api.answers import (
    FaqImport,
    FaqImported,
    InsightsQuery,
    NewOwnerAnswer,
    OwnerAnswer,
    OwnerAnswerPatch,
    OwnerAnswers,
    OwnerAnswersQuery,
    QuestionGroups,
)
from ragcore.api.operations import Reply, operation
from ragcore.api.queries import no_such, path_id, read_query
from ragcore.converter import converter, structure_body
from ragio.answers import insights, store, writing
from ragio.http.context import service
from ragio.http.inputs import json_body
from ragio.http.problems import Problem

blueprint = Blueprint("answers", __name__)
PATH = "/answers"
ANSWERS = ("owner's answer", PATH)
ANSWER_ID = {"path": {"id": {"type": "integer"}}}


@blueprint.get(PATH)
@operation(Reply(200, "The owner's answers", OwnerAnswers), 422, query=OwnerAnswersQuery)
async def list_answers() -> OwnerAnswers:
    """The owner's answers in force, latest written first; page with ?before="""
    query = read_query(OwnerAnswersQuery, request.args)
    found = await service().database.run(store.list_answers, query.limit, query.before or None)
    more = len(found) == query.limit
    return converter.structure(
        {"answers": found, "next_before": found[-1]["id"] if found and more else None},
        OwnerAnswers,
    )


@blueprint.post(PATH)
@operation(
    Reply(201, "Written (Location: /answers/{id})", OwnerAnswer), 409, 422, body=NewOwnerAnswer
)
async def create_answer() -> tuple[OwnerAnswer, int, dict[str, str]]:
    """Answer questions customers ask, in the owner's words

    A question close enough to one of them is answered with this text from now on, with
    no model call and no token; one less close gives it to the model as its first source.
    A question another answer covers (word for word) is a 409 naming it."""
    new = structure_body(await json_body(required=True), NewOwnerAnswer)
    svc = service()
    vectors = await writing.embedded(svc, new.questions)
    try:
        language = await writing.language_of(svc, new.answer)
        answer_id = await svc.database.run(
            store.create, new.questions, new.answer, vectors, svc.clock.now(), "created", language
        )
    except store.Claimed as claimed:
        raise _conflict(claimed) from None
    return await _answer(answer_id), 201, {"Location": f"{PATH}/{answer_id}"}


@blueprint.get(f"{PATH}/<id>")
@operation(Reply(200, "The answer and its versions", OwnerAnswer), 404, **ANSWER_ID)
async def get_answer(id: str) -> OwnerAnswer:  # noqa: A002 (the path's name)
    """One owner's answer, with every version of it, the latest first"""
    return await _answer(path_id(id, *ANSWERS), raw=id)


@blueprint.patch(f"{PATH}/<id>")
@operation(
    Reply(200, "Changed (a new version)", OwnerAnswer),
    404,
    409,
    422,
    body=OwnerAnswerPatch,
    **ANSWER_ID,
)
async def edit_answer(id: str) -> OwnerAnswer:  # noqa: A002 (the path's name)
    """Change an answer's text or its questions: it counts from the next question on"""
    answer_id = path_id(id, *ANSWERS)
    patch = structure_body(await json_body(required=True), OwnerAnswerPatch)
    svc = service()
    vectors = await writing.embedded(svc, patch.questions) if patch.questions is not None else None
    language = await writing.language_of(svc, patch.answer) if patch.answer is not None else None
    try:
        changed = await svc.database.run(
            store.update,
            answer_id,
            patch.questions,
            patch.answer,
            vectors,
            svc.clock.now(),
            "edited",
            language,
        )
    except store.Claimed as claimed:
        raise _conflict(claimed) from None
    if not changed:
        raise no_such(id, *ANSWERS)
    return await _answer(answer_id)


@blueprint.delete(f"{PATH}/<id>")
@operation(Reply(204, "Withdrawn"), 404, **ANSWER_ID)
async def delete_answer(id: str) -> tuple[str, int]:  # noqa: A002 (the path's name)
    """Withdraw an answer: from the next question on, it is not served (its history stays)"""
    svc = service()
    if not await svc.database.run(store.delete, path_id(id, *ANSWERS), svc.clock.now()):
        raise no_such(id, *ANSWERS)
    return "", 204


@blueprint.post(f"{PATH}/import")
@operation(Reply(201, "Imported", FaqImported), 409, 422, body=FaqImport)
async def import_answers() -> tuple[FaqImported, int]:
    """Import an FAQ (CSV or JSON): every answer, or none

    An entry with a question an answer already covers rewrites that answer (a new
    version); the others are new answers. Malformed entries are a 422 listing each by
    its line (problems: [{line, detail}]), and nothing is imported."""
    given = structure_body(await json_body(required=True), FaqImport)
    try:
        imported = await writing.import_faq(service(), given.text, given.format)
    except FaqInvalid as invalid:
        raise Problem(
            422,
            f"the FAQ was not imported: {invalid}",
            problems=[{"line": p.line, "detail": p.detail} for p in invalid.problems],
        ) from None
    except store.Claimed as claimed:
        raise _conflict(claimed) from None
    return converter.structure(imported, FaqImported), 201


@blueprint.get("/insights/gaps")
@operation(
    Reply(200, "The groups, most asked first", QuestionGroups), 422, 502, 503, query=InsightsQuery
)
async def gaps() -> QuestionGroups:
    """What customers asked that was not answered well, grouped by need

    The questions not answered (not_found), rated down, or handed to a person, grouped
    by the need they express, most asked first. A group an owner's answer covers is left
    out unless ?answered= says otherwise: answering it takes it off the list."""
    query = read_query(InsightsQuery, request.args)
    found = await insights.question_groups(
        service(), True, query.filters(), query.covered(False), query.limit, query.offset
    )
    return converter.structure(found, QuestionGroups)


@blueprint.get("/insights/top-questions")
@operation(
    Reply(200, "The groups, most asked first", QuestionGroups), 422, 502, 503, query=InsightsQuery
)
async def top_questions() -> QuestionGroups:
    """What customers ask most, grouped by need, on every channel"""
    query = read_query(InsightsQuery, request.args)
    found = await insights.question_groups(
        service(), False, query.filters(), query.covered(None), query.limit, query.offset
    )
    return converter.structure(found, QuestionGroups)


async def _answer(answer_id: int, raw: str | None = None) -> OwnerAnswer:
    found = await service().database.run(store.get, answer_id)
    if found is None:
        raise no_such(raw or str(answer_id), *ANSWERS)
    return converter.structure(found, OwnerAnswer)


def _conflict(claimed: store.Claimed) -> Problem:
    return Problem(
        409,
        f"{claimed.question!r} is answered by answer {claimed.answer_id} already: edit that "
        f"one (PATCH {PATH}/{claimed.answer_id}) or leave the question out",
        existing_id=claimed.answer_id,
    )
