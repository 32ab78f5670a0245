"""/automation-workflows: a workflow as shown, created and changed, and the list filters."""

from __future__ import annotations

from typing import Annotated

import attrs

from ragcore.retry import Outcome
from ragcore.schema import described, text
from ragcore.workflows.definitions import CHANNELS, MAX_NAME_CHARS, URL, Channel, Workflow
from ragcore.workflows.definitions import WorkflowPatch as WorkflowPatch  # the body, by its rules


@attrs.frozen
class Workflows:
    workflows: list[Workflow]


@attrs.frozen
class NewWorkflow:
    """Unknown and read-only fields are refused (422) by name."""

    name: Annotated[str, text(MAX_NAME_CHARS)]
    webhook_url: Annotated[str, described(**URL)]
    channels: Annotated[
        list[Channel],
        described(
            "the wired text channels and the chat widget (web) whose replies call it; voice, "
            "api, slack and email never do and are refused",
            **CHANNELS,
        ),
    ]
    is_active: bool = True


@attrs.frozen
class WorkflowFilters:
    channel: Annotated[Channel, described("only workflows this channel triggers")] = "telegram"
    is_active: Annotated[bool, described("true or false")] = True


@attrs.frozen
class WorkflowTestResult:
    """POST /automation-workflows/{id}/test: how the one test call went."""

    ok: Annotated[bool, described("true: the receiver answered 2xx")]
    status: Annotated[
        int | None, described("the receiver's HTTP status; null: no answer (or not called)")
    ]
    message: Annotated[
        str,
        described(
            "how it went, in words: the status, or why there was none (the host named, "
            "never the URL's path or query)"
        ),
    ]
    elapsed_ms: Annotated[int, described("from the first lookup to the answer's headers")]


def call_result(outcome: Outcome, elapsed_ms: int) -> WorkflowTestResult:
    """A test call's ``outcome`` as the API shows it."""
    if outcome.refused is not None:
        message = f"not called: {outcome.refused}"
    elif outcome.delivered:
        message = f"the workflow answered HTTP {outcome.status}"
    elif outcome.timed_out:
        message = outcome.failure or "no answer in time"
    elif outcome.status is None:
        message = outcome.describe()
    else:
        message = f"the workflow answered {outcome.describe()}"
    return WorkflowTestResult(outcome.delivered, outcome.status, message, max(0, elapsed_ms))
