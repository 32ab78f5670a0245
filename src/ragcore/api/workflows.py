"""/automation-workflows: a workflow as shown, created and changed, and the list filters."""

from __future__ import annotations

from typing import Annotated

import attrs

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
