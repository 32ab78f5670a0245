"""What a workflow receives: the JSON body ``{channel, message, ai_reply, context}``
(SPEC section 6) and, when the owner sets WORKFLOW_SIGNING_SECRET, the Standard Webhooks
signature headers (https://www.standardwebhooks.com).

The signature is HMAC-SHA256 over ``"{webhook-id}.{webhook-timestamp}.{body}"``, base64,
sent as ``webhook-signature: v1,<signature>``. The secret is either the standard
``whsec_<base64>`` form (the key is the decoded bytes, so any Standard Webhooks library
verifies it as given) or plain text (the key is its UTF-8 bytes). The id and the time
are passed in: the runner makes them. The key is read from the secret by
``ragcore.settings.signing_key``, which also checks the setting.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

from ragcore import __version__
from ragcore.workflows.definitions import WIRED_CHANNELS

CONTENT_TYPE = "application/json"
USER_AGENT = f"ragchat/{__version__} (workflow call)"


def workflow_body(channel: str, message: str, ai_reply: str, context: Any) -> bytes:
    """The exact bytes POSTed (and signed). A context value JSON cannot hold is sent as its
    text rather than failing the call."""
    payload = {"channel": channel, "message": message, "ai_reply": ai_reply, "context": context}
    return json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")


#: a test call's message and reply (POST /automation-workflows/{id}/test): a receiver, or
#: whoever reads what it did, sees that no customer wrote and nobody was answered
TEST_MESSAGE = "Test call from ragchat: no customer wrote this message."
TEST_REPLY = "Test call from ragchat: this reply was sent to nobody."


def workflow_test_body(workflow_id: int, channels: Sequence[str]) -> bytes:
    """A test call's body: a real call's shape (``workflow_body``) on the workflow's first
    channel (the first wired one for a workflow stored without any), with the test's
    message and reply, and a context that says it is a test (``"test": true``) of which
    workflow."""
    channel = channels[0] if channels else WIRED_CHANNELS[0]
    context = {"test": True, "workflow_id": workflow_id}
    return workflow_body(channel, TEST_MESSAGE, TEST_REPLY, context)


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,`` and the base64 HMAC-SHA256 of
    ``{id}.{timestamp}.{body}``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def request_headers(
    body: bytes, key: bytes | None, message_id: str, timestamp: int
) -> dict[str, str]:
    """The headers of one attempt. Unsigned (no key): no authentication header of any kind
    (SPEC section 5 item 9). Signed: ``webhook-id`` stays the same across the retries of
    one call, so a receiver can drop duplicates; the timestamp is each attempt's own."""
    headers = {"content-type": CONTENT_TYPE, "user-agent": USER_AGENT}
    if key is not None:
        headers["webhook-id"] = message_id
        headers["webhook-timestamp"] = str(timestamp)
        headers["webhook-signature"] = signature(key, message_id, timestamp, body)
    return headers
