"""The OpenAI-compatible API: GET /v1/models and POST /v1/chat/completions, read and
written in OpenAI's wire format so that chat clients (the ``openai`` SDKs, Open WebUI,
…) use the service as they would a model.

Each role is a model: ``ragchat`` answers as the service itself, ``ragchat-<role>``
as that AI employee (``<role>`` alone is taken too). The request's whole message
history is read: the last message is the question, the user and assistant messages
before it the conversation (``ragcore.chat.followup``). System and developer messages
are not instructions to the service: the grounding rules stay as they are on /chat.
Sampling settings (``temperature``, ``max_tokens`` …) are the service's own and are
ignored. Errors are OpenAI-shaped (``{"error": {"message", "type", "param", "code"}}``)
so that clients show them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ragcore.chat.followup import Exchange
from ragcore.chat.pipeline import MAX_QUESTION_CHARS, ChatAnswer
from ragcore.converter import converter
from ragcore.employees.learning import MAX_ASKER_CHARS
from ragcore.inputs import NOT_BLANK

SERVICE_MODEL = "ragchat"
OWNER = "ragchat"
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: at most this many messages of history are read (the latest)
MAX_MESSAGES = 200

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


_TEXT_PART = {
    "type": "object",
    "required": ["type", "text"],
    "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
}
#: the schema of a chat completion's request, as ``read_messages`` and ``read_options`` read
#: it; any other field (temperature, max_tokens …) is taken and ignored
REQUEST_SCHEMA = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": {
            "type": "string",
            "pattern": NOT_BLANK,
            "description": "ragchat, or ragchat-<role> (GET /v1/models); another is 404",
        },
        "messages": {
            "type": "array",
            "minItems": 1,
            "description": (
                "the conversation; the last message must be the user's question, with text "
                f"(at most {MAX_QUESTION_CHARS} characters): 400 otherwise. The latest "
                f"{MAX_MESSAGES} are read"
            ),
            "items": {
                "type": "object",
                "required": ["role"],
                "properties": {
                    "role": {"enum": list(ROLES)},
                    "content": {
                        "anyOf": [
                            {"type": ["string", "null"]},
                            {"type": "array", "items": _TEXT_PART},
                        ]
                    },
                },
            },
        },
        "stream": {"type": ["boolean", "null"]},
        "stream_options": {
            "type": ["object", "null"],
            "properties": {"include_usage": {"type": "boolean"}},
        },
        "n": {"enum": [1, None], "description": "one choice is answered"},
        "user": {"type": ["string", "null"], "maxLength": MAX_ASKER_CHARS},
    },
}

#: the schema of an error's body, for /openapi.json
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
ERROR_BODY = ("application/json", ERROR_SCHEMA)


class OpenAIError(Exception):
    """An error as OpenAI clients read it: the status and ``{"error": {...}}``, and the
    response headers it carries (``Retry-After`` on a 503, as the rest of the API)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = dict(headers or {})
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        kind = ERROR_TYPES.get(self.status, "server_error" if self.status >= 500 else "api_error")
        return {
            "error": {
                "message": self.message,
                "type": kind,
                "param": self.param,
                "code": self.code,
            }
        }


def model_id(role: str | None) -> str:
    return SERVICE_MODEL if role is None else f"{SERVICE_MODEL}-{role}"


def model_list(roles: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """``GET /v1/models``: the service, then each role (identifier, created as Unix time)."""
    first = min((created for _, created in roles), default=0)
    models = [(SERVICE_MODEL, first), *((model_id(role), created) for role, created in roles)]
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": created, "owned_by": OWNER}
            for name, created in models
        ],
    }


def role_of_model(model: Any, known: Sequence[str]) -> str | None:
    """The role a ``model`` names (None: the service itself); a 404 OpenAIError naming the
    models there are when it names none."""
    if not isinstance(model, str) or not model.strip():
        raise OpenAIError(400, "you must provide a model parameter", param="model")
    name = model.strip().lower()
    if name == SERVICE_MODEL:
        return None
    for prefix in (f"{SERVICE_MODEL}-", f"{SERVICE_MODEL}/", f"{SERVICE_MODEL}:"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    if name in known:
        return name
    listed = ", ".join(model_id(role) for role in (None, *known))
    raise OpenAIError(
        404,
        f"The model `{model[:100]}` does not exist; the models are: {listed} (GET /v1/models)",
        param="model",
        code="model_not_found",
    )


def message_text(message: Any, index: int) -> tuple[str, str]:
    """A message's role and text; content parts of type text are joined. A 400 OpenAIError
    naming the message otherwise."""
    where = f"messages[{index}]"
    if not isinstance(message, Mapping):
        raise OpenAIError(400, f"{where} must be an object", param=where)
    role = message.get("role")
    if role not in ROLES:
        raise OpenAIError(
            400, f"{where}.role must be one of {', '.join(ROLES)}", param=f"{where}.role"
        )
    content = message.get("content")
    if content is None:
        return role, ""
    if isinstance(content, str):
        return role, content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise OpenAIError(
                    400,
                    f"{where}.content: only text parts are read, not {str(kind)[:40]}",
                    param=f"{where}.content",
                )
            text = part.get("text")
            if not isinstance(text, str):
                raise OpenAIError(
                    400, f"{where}.content: a text part needs its text", param=f"{where}.content"
                )
            texts.append(text)
        return role, "\n".join(texts)
    raise OpenAIError(400, f"{where}.content must be text or a list of parts", param=where)


def read_messages(messages: Any) -> tuple[str, tuple[Exchange, ...]]:
    """The question (the last message, a user's) and the conversation before it: each
    user message with the assistant's reply that followed it. System, developer and tool
    messages are not part of it."""
    if not isinstance(messages, list) or not messages:
        raise OpenAIError(400, "messages must be a non-empty array", param="messages")
    if len(messages) > MAX_MESSAGES:
        messages = messages[-MAX_MESSAGES:]
    read = [message_text(message, index) for index, message in enumerate(messages)]
    role, question = read[-1]
    if role != "user":
        raise OpenAIError(
            400,
            f"the last message must be the user's question, not {role}'s",
            param=f"messages[{len(messages) - 1}]",
        )
    if not question.strip():
        raise OpenAIError(
            400, "the last message has no text", param=f"messages[{len(messages) - 1}]"
        )
    if len(question) > MAX_QUESTION_CHARS:
        raise OpenAIError(
            400,
            f"the last message has {len(question)} characters; the limit is {MAX_QUESTION_CHARS}",
            param=f"messages[{len(messages) - 1}]",
            code="string_above_max_length",
        )
    history: list[Exchange] = []
    pending: str | None = None
    for role, text in read[:-1]:
        if role == "user":
            if pending is not None:
                history.append(Exchange(pending, ""))
            pending = text
        elif role == "assistant" and pending is not None:
            history.append(Exchange(pending, text))
            pending = None
    if pending is not None:
        history.append(Exchange(pending, ""))
    return question.strip(), tuple(history)


def read_options(body: Mapping[str, Any]) -> tuple[bool, bool, str | None]:
    """``stream``, ``stream_options.include_usage`` and ``user``; a 400 OpenAIError for a
    value of the wrong type, and for ``n`` other than 1 (one answer is given)."""
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise OpenAIError(400, "stream must be a boolean", param="stream")
    options = body.get("stream_options")
    options = {} if options is None else options
    if not isinstance(options, Mapping):
        raise OpenAIError(400, "stream_options must be an object", param="stream_options")
    include_usage = options.get("include_usage", False)
    if not isinstance(include_usage, bool):
        raise OpenAIError(
            400, "stream_options.include_usage must be a boolean", param="stream_options"
        )
    n = body.get("n", 1)
    if isinstance(n, bool) or n not in (1, None):
        raise OpenAIError(400, "n: one choice is answered; send n 1 or leave it out", param="n")
    user = body.get("user")
    if user is not None and (not isinstance(user, str) or len(user) > MAX_ASKER_CHARS):
        raise OpenAIError(
            400, f"user must be text of at most {MAX_ASKER_CHARS} characters", param="user"
        )
    return stream, include_usage, user or None


def usage_of(answer: ChatAnswer) -> dict[str, int]:
    usage = answer.usage
    prompt, completion = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def citations_of(answer: ChatAnswer) -> list[Any]:
    return [converter.unstructure(citation) for citation in answer.citations]


def extras(answer: ChatAnswer) -> dict[str, Any]:
    """What the service adds to OpenAI's shape: the citations (as on /chat), and who
    answered and where the turn was recorded."""
    return {
        "citations": citations_of(answer),
        "ragchat": {
            "role": answer.role,
            "provider": answer.provider,
            "model": answer.model,
            "language": answer.language,
            "limited": answer.limited,
            "search_question": answer.search_question,
            "conversation_id": answer.conversation_id,
            "turn": answer.turn,
        },
    }


@attrs.frozen
class Completion:
    """One answer's completion as OpenAI writes it: whole, or as chunks of a stream,
    all under the same ``id``, ``created`` (Unix time) and ``model``."""

    id: str
    created: int
    model: str

    def _head(self, kind: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": kind,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
        }

    def whole(self, answer: ChatAnswer) -> dict[str, Any]:
        """The ``chat.completion`` object for ``answer``."""
        message = {"role": "assistant", "content": answer.answer, "refusal": None}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
        return {
            **self._head("chat.completion"),
            "choices": [choice],
            "usage": usage_of(answer),
            **extras(answer),
        }

    def chunk(
        self, delta: Mapping[str, Any], finish_reason: str | None = None, **more: Any
    ) -> dict[str, Any]:
        """One ``chat.completion.chunk`` of a streamed answer."""
        choice = {
            "index": 0,
            "delta": dict(delta),
            "logprobs": None,
            "finish_reason": finish_reason,
        }
        return {**self._head("chat.completion.chunk"), "choices": [choice], **more}

    def usage_chunk(self, answer: ChatAnswer) -> dict[str, Any]:
        """The last chunk when ``stream_options.include_usage``: no choices, the usage."""
        return {**self._head("chat.completion.chunk"), "choices": [], "usage": usage_of(answer)}
