"""/automation-workflows: a workflow as shown, created and changed, and the list filters."""

from __future__ import annotations

from typing import Annotated

import attrs

from ragcore.api.schema import described
from ragcore.workflows.definitions import MAX_NAME_CHARS, MAX_URL_CHARS, Channel, Workflow
from ragcore.workflows.definitions import WorkflowPatch as WorkflowPatch  # the body, by its rules

NAME = {"minLength": 1, "maxLength": MAX_NAME_CHARS}
CHANNELS = {"minItems": 1}
TARGET = (
    "http:// or https://, with a host and no user:password; never a metadata, link-local or "
    "unspecified address, nor the service itself; loopback and private addresses only with "
    "WORKFLOW_ALLOW_PRIVATE_TARGETS=true (422 otherwise)"
)


@attrs.frozen
class Workflows:
    workflows: list[Workflow]


@attrs.frozen
class NewWorkflow:
    """Unknown and read-only fields are refused (422) by name."""

    name: Annotated[str, described(**NAME)]
    webhook_url: Annotated[str, described(TARGET, maxLength=MAX_URL_CHARS)]
    channels: Annotated[
        list[Channel],
        described(
            "the wired text channels whose replies call it; voice, api, slack and email never do "
            "and are refused",
            **CHANNELS,
        ),
    ]
    is_active: bool = True


@attrs.frozen
class WorkflowFilters:
    channel: Annotated[Channel, described("only workflows this channel triggers")] = "telegram"
    is_active: Annotated[bool, described("true or false")] = True
