"""Schemathesis hooks of tests/io/test_api_fuzzing.py, loaded by its run through
SCHEMATHESIS_HOOKS: the refusals of schema-valid requests that are not the schema's
fault, because they follow from a rule no JSON Schema can state. Each is named below
with its reason, and recognised by its operation, status and the field its problem
names; every other failure fails the run. Each rule is stated in its operation's
description (or its field's) in /openapi.json."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import schemathesis
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.openapi.checks import RejectedPositiveData

from ragcore.errors import InvalidInput
from ragcore.integrations.addresses import URL_FIELDS
from ragcore.integrations.kinds import KINDS
from ragcore.websites.sites import NOWHERE
from ragcore.workflows.definitions import check_webhook_url


def _problem(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _field(response: Any) -> str:
    return str(_problem(response).get("field", ""))


def _detail(response: Any) -> str:
    return str(_problem(response).get("detail", ""))


def _body(case: Any) -> dict[str, Any]:
    return case.body if isinstance(case.body, dict) else {}


def question_in_neither_place(case: Any, response: Any) -> bool:
    """/chat and /chat/stream take the question as ?question= or in the JSON body: one of
    the two is required, and a schema can require neither across them."""
    asked = (case.query or {}).get("question") or _body(case).get("question")
    return response.status_code == 422 and _field(response) == "question" and not asked


def a_live_action_against_its_source(case: Any, response: Any) -> bool:
    """A live action's template is a query in the language of its source's kind (SQL,
    a path, a filter, a search), checked against the stored source source_id names: a
    template the schema admits may not fit the source, or source_id name no source. A
    change is checked with the action as stored: one left without trigger and without
    auto-matching, or a write without a trigger, cannot run."""
    kept_by_the_stored_action = case.method == "PATCH" and _field(response) == "triggers"
    return response.status_code == 422 and (
        _field(response) in ("template", "source_id") or kept_by_the_stored_action
    )


def values_the_template_needs(case: Any, response: Any) -> bool:
    """A dry run needs the values its stored template's placeholders name."""
    return (
        response.status_code == 422
        and _field(response) == "values"
        and (_detail(response).startswith("missing "))
    )


def a_change_to_a_source_of_another_kind(case: Any, response: Any) -> bool:
    """A PATCH changes a data source of the kind it was made as: the schema admits every
    kind's fields (the document cannot know the stored one's), and a required field
    removed with null must leave one of the stored kind's alternatives whole."""
    detail = _detail(response)
    return response.status_code == 422 and (
        "cannot change" in detail or "; the fields of " in detail or " required for " in detail
    )


def a_file_that_cannot_be_read(case: Any, response: Any) -> bool:
    """An uploaded file is read by its content: a document's format and its words, a CSV
    file's text. A schema describes the part, not what the file holds."""
    return case.media_type == "multipart/form-data" and (
        response.status_code == 415 or (response.status_code == 422 and _field(response) == "file")
    )


def a_role_made_by_its_first_change(case: Any, response: Any) -> bool:
    """PATCH /employees/{role} creates a role it does not find: then display_name and
    personality are required; a role that exists takes any of its fields."""
    return response.status_code == 422 and "required to create the new role" in _detail(response)


def an_action_the_settings_cannot_send(case: Any, response: Any) -> bool:
    """An action is checked against the settings as it is submitted (WEBHOOK_TARGETS,
    the e-mail settings and allow list, CHATOPS_WEBHOOK_URL): refused (422) and recorded
    as refused when they cannot send it."""
    return response.status_code == 422 and _problem(response).get("action_status") == "refused"


def a_span_that_ends_before_it_begins(case: Any, response: Any) -> bool:
    """GET /conversations and /insights: until must be later than since, a comparison of
    two values."""
    return (
        response.status_code == 422
        and _field(response) == "until"
        and ("later than since" in _detail(response))
    )


def the_same_question_twice(case: Any, response: Any) -> bool:
    """An owner's answer's questions are told apart word for word, case, spacing and
    punctuation aside ("a?" and "A"): a schema's uniqueItems compares them as sent."""
    return response.status_code == 422 and "repeats an earlier question" in _detail(response)


def an_faq_that_cannot_be_read(case: Any, response: Any) -> bool:
    """POST /answers/import reads the FAQ's text as CSV or JSON: a schema describes the
    field, not what the file holds (its problems come by line)."""
    return response.status_code == 422 and "problems" in _problem(response)


def the_last_message_of_a_completion(case: Any, response: Any) -> bool:
    """POST /v1/chat/completions: the last message is the question, so it must be the
    user's, with text within the question's limit; a schema cannot single out the last
    item of an array."""
    error = _problem(response).get("error")
    param = error.get("param") if isinstance(error, dict) else None
    return response.status_code == 400 and str(param).startswith("messages[")


def an_address_a_workflow_may_not_call(case: Any, response: Any) -> bool:
    """A workflow's webhook_url is judged by where it leads as it is saved: its host is
    resolved, and an address that is the service itself, link-local, cloud metadata or
    unspecified is refused whatever its spelling (private ones too, without
    WORKFLOW_ALLOW_PRIVATE_TARGETS). The schema's pattern is the URL's form; a URL of that
    form refused for where it leads is this rule, not a mismatch."""
    url = _body(case).get("webhook_url")
    if response.status_code != 422 or _field(response) != "webhook_url" or not url:
        return False
    try:
        check_webhook_url(url)
    except InvalidInput:
        return False  # refused for its form: the schema's pattern should have said so
    return True


def an_owner_field_judged_with_the_stored_one(case: Any, response: Any) -> bool:
    """POST /autonomy: approval_channel or approval_target sent alone is judged with the
    other as stored: a target with no owner stored, or a channel whose form the stored
    target does not have, is refused."""
    body = _body(case)
    alone = ("approval_channel" in body) != ("approval_target" in body)
    return (
        alone
        and response.status_code == 422
        and _field(response) in ("approval_channel", "approval_target")
    )


#: the fields that name where a data source connects (``ragcore.integrations.addresses``)
SOURCE_HOSTS = {
    "url",
    "host",
    "service_account_json",
    *(f for fs in URL_FIELDS.values() for f in fs),
}


def a_host_a_source_may_not_reach(case: Any, response: Any) -> bool:
    """A data source's host, as its fields spell it, is judged as it is saved by the
    address rules of workflows and actions (an address or name that leads to loopback,
    private, link-local or metadata addresses, the service's own database, a name IDNA
    cannot read): 422 naming the field, its detail led by the field's name."""
    field = _field(response)
    return (
        response.status_code == 422
        and field in SOURCE_HOSTS
        and _detail(response).startswith(f"{field}: ")
    )


#: every credential field of every kind (``ragcore.integrations.kinds``)
SOURCE_FIELDS = {field.name for kind in KINDS.values() for field in kind.fields}


def a_setting_a_source_cannot_use(case: Any, response: Any) -> bool:
    """A data source's setting its connector could not use, as far as its text shows (a
    URL's scheme, a database URL, a table name, Salesforce's username and password
    together, Shopify's resource, a key file that is not one:
    ``ragcore.integrations.settings``), is refused as it is saved: 422 naming the field,
    its detail led by the field's name. Those that are a form (``auth_header``,
    ``api_version``) are a pattern in the schema too."""
    field = _field(response)
    return (
        response.status_code == 422
        and field in SOURCE_FIELDS
        and _detail(response).startswith(f"{field}: ")
    )


def a_website_with_nowhere_to_start(case: Any, response: Any) -> bool:
    """A website needs a start URL or a sitemap: start_urls and sitemaps may each be empty,
    not both (after a change, as stored), which no schema of either field can say."""
    return (
        response.status_code == 422
        and _field(response) == "start_urls"
        and _detail(response) == NOWHERE
    )


def an_expiry_judged_by_the_clock(case: Any, response: Any) -> bool:
    """A key's expires_at must be later than now and within MAX_EXPIRY_DAYS of it, and is
    refused beside expires_in_days (two answers to one question): a moment compared with
    the clock, and a pair of fields, which no schema can state."""
    detail = _detail(response)
    return (
        response.status_code == 422
        and _field(response) == "expires_at"
        and ("later than now" in detail or "not both" in detail or "days from now" in detail)
    )


RULES: dict[str, tuple[Callable[[Any, Any], bool], ...]] = {
    "POST /keys": (an_expiry_judged_by_the_clock,),
    "PATCH /keys/{id}": (an_expiry_judged_by_the_clock,),
    "POST /websites": (a_website_with_nowhere_to_start,),
    "PATCH /websites/{id}": (a_website_with_nowhere_to_start,),
    "POST /autonomy": (an_owner_field_judged_with_the_stored_one,),
    "POST /chat": (question_in_neither_place,),
    "POST /chat/stream": (question_in_neither_place,),
    "POST /live-actions": (a_live_action_against_its_source,),
    "PATCH /live-actions/{id}": (a_live_action_against_its_source,),
    "POST /live-actions/{id}/dry-run": (values_the_template_needs,),
    "PATCH /integrations/{id}": (
        a_change_to_a_source_of_another_kind,
        a_host_a_source_may_not_reach,
        a_setting_a_source_cannot_use,
    ),
    "POST /integrations": (
        a_file_that_cannot_be_read,
        a_host_a_source_may_not_reach,
        a_setting_a_source_cannot_use,
    ),
    "POST /documents": (a_file_that_cannot_be_read,),
    "PATCH /employees/{role}": (a_role_made_by_its_first_change,),
    "POST /actions": (an_action_the_settings_cannot_send,),
    "GET /conversations": (a_span_that_ends_before_it_begins,),
    "GET /insights/gaps": (a_span_that_ends_before_it_begins,),
    "GET /insights/top-questions": (a_span_that_ends_before_it_begins,),
    "POST /answers": (the_same_question_twice,),
    "PATCH /answers/{id}": (the_same_question_twice,),
    "POST /answers/import": (an_faq_that_cannot_be_read,),
    "POST /v1/chat/completions": (the_last_message_of_a_completion,),
    "POST /automation-workflows": (an_address_a_workflow_may_not_call,),
    "PATCH /automation-workflows/{id}": (an_address_a_workflow_may_not_call,),
}


def a_form_field_is_text(case: Any) -> bool:
    """A multipart form's fields are text on the wire: a field's type changed (to a number,
    say) is sent as its text, which may well be valid text. Schemathesis counts it as a
    request the schema refuses; what was sent is not one."""
    data = case.meta.phase.data if case.meta is not None else None
    mutations = getattr(data, "mutations", ())
    scenario = getattr(data, "scenario", None)
    return case.media_type == "multipart/form-data" and (
        (mutations and all(mutation.keywords == ("type",) for mutation in mutations))
        or scenario == "incorrect_type"
    )


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but a schema-valid request refused by one of the rules above,
    and a form whose fields were sent as text after all."""
    if isinstance(failure, AcceptedNegativeData):
        return not a_form_field_is_text(case)
    if not isinstance(failure, RejectedPositiveData):
        return True
    rules = RULES.get(case.operation.label, ())
    return not any(rule(case, response) for rule in rules)
