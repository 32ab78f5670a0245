"""GET /openapi.json: the API described. A test fails when a route is missing here."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from ragcore import __version__
from ragcore.chat.fallback import FailureKind
from ragio.http import openapi_actions

blueprint = Blueprint("openapi", __name__)

PROBLEM = {"$ref": "#/components/responses/Problem"}
ROLE_PARAMETER = {"name": "role", "in": "path", "required": True, "schema": {"type": "string"}}
USER_PARAMETER = {
    "name": "user",
    "in": "query",
    "schema": {"type": "string", "maxLength": 128},
    "description": "who is asking, kept as a hash; roles learn from questions many users ask",
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "ragchat",
        "version": __version__,
        "description": "Retrieval-augmented chat over your own documents, with citations.",
    },
    "components": {
        "securitySchemes": {
            "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        },
        "responses": {
            "Problem": {
                "description": "An RFC 9457 problem",
                "content": {"application/problem+json": {"schema": _ref("Problem")}},
            },
        },
        "schemas": {
            "Problem": {
                "type": "object",
                "required": ["type", "title", "status", "detail"],
                "properties": {
                    "type": {"type": "string"},
                    "title": {"type": "string"},
                    "status": {"type": "integer"},
                    "detail": {"type": "string"},
                    "field": {"type": "string", "description": "the input at fault, if one"},
                    "providers": {
                        "type": "array",
                        "description": "502 and 503 from answering: each provider tried",
                        "items": {
                            "type": "object",
                            "required": ["provider", "failure", "status"],
                            "properties": {
                                "provider": {"type": "string"},
                                "failure": {
                                    "type": "string",
                                    "enum": [kind.value for kind in FailureKind],
                                },
                                "status": {"type": ["integer", "null"]},
                                "reason": {"type": "string"},
                            },
                        },
                    },
                },
            },
            "Citation": {
                "type": "object",
                "properties": {
                    "number": {"type": "integer", "description": "the [n] marker in the answer"},
                    "document_id": {"type": "integer"},
                    "document_name": {"type": "string"},
                    "chunk_id": {"type": "integer"},
                    "snippet": {"type": "string"},
                    "score": {"type": "number"},
                    "heading_path": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "the headings (or PDF page) the passage sits under",
                    },
                },
            },
            "ChatAnswer": {
                "type": "object",
                "required": [
                    "answer",
                    "citations",
                    "role",
                    "provider",
                    "model",
                    "usage",
                    "limited",
                    "language",
                    "grounded",
                    "check_usage",
                    "action",
                ],
                "properties": {
                    "answer": {"type": "string"},
                    "citations": {"type": "array", "items": _ref("Citation")},
                    "role": {"type": ["string", "null"]},
                    "provider": {"type": ["string", "null"]},
                    "model": {"type": ["string", "null"]},
                    "usage": {
                        "type": ["object", "null"],
                        "properties": {
                            "prompt_tokens": {"type": "integer"},
                            "completion_tokens": {"type": "integer"},
                            "estimated": {"type": "boolean"},
                        },
                    },
                    "limited": {
                        "type": "boolean",
                        "description": "true when a token budget stopped the request",
                    },
                    "language": {
                        "type": ["string", "null"],
                        "description": "ISO 639-1 code of the answer's language",
                    },
                    "check_usage": {
                        "type": ["object", "null"],
                        "description": (
                            "tokens of the grounding check's own call (usage is the "
                            "answer's); null when no judge was asked"
                        ),
                    },
                    "grounded": {
                        "type": ["boolean", "null"],
                        "description": (
                            "a sensitive role's grounding check: false adds a caveat to "
                            "the answer; null when no check ran"
                        ),
                    },
                },
            },
            # POST /chat/stream: each server-sent event is an `event:` line naming its kind
            # and one `data:` line of JSON, the object described here as `data`
            "ChatStreamEvent": {
                "description": "One server-sent event of /chat/stream: `event: <event>` and "
                "`data: <data as one line of JSON>`. Any number of `token` events, then "
                "exactly one `done` or `error` event, and the stream ends.",
                "oneOf": [
                    _ref("ChatStreamToken"),
                    _ref("ChatStreamDone"),
                    _ref("ChatStreamError"),
                ],
            },
            "ChatStreamToken": {
                "type": "object",
                "required": ["event", "data"],
                "properties": {
                    "event": {"const": "token"},
                    "data": {
                        "type": "object",
                        "required": ["text"],
                        "additionalProperties": False,
                        "properties": {
                            "text": {
                                "type": "string",
                                "description": "the next piece of the answer as it is "
                                "written; the done event holds the answer as checked",
                            }
                        },
                    },
                },
            },
            "ChatStreamDone": {
                "type": "object",
                "required": ["event", "data"],
                "properties": {
                    "event": {"const": "done"},
                    "data": {
                        "$ref": "#/components/schemas/ChatAnswer",
                        "description": "the whole answer, as POST /chat returns it",
                    },
                },
            },
            "ChatStreamError": {
                "type": "object",
                "required": ["event", "data"],
                "properties": {
                    "event": {"const": "error"},
                    "data": {
                        "$ref": "#/components/schemas/Problem",
                        "description": "the answer failed after the first event (a provider "
                        "breaking off: 503); a failure before it is an ordinary problem "
                        "response instead of a stream",
                    },
                },
            },
            "ChatQuestion": {
                "type": "object",
                "required": ["question"],
                "properties": {
                    "question": {"type": "string", "maxLength": 4000},
                    "role": {"type": "string"},
                    "user": {"type": "string", "maxLength": 128},
                },
            },
            "NewDocument": {
                "type": "object",
                "required": ["name", "text"],
                "properties": {
                    "name": {"type": "string", "maxLength": 255},
                    "text": {"type": "string", "description": "plain text or markdown"},
                },
            },
            "DocumentUpload": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "txt, md, html, pdf (text layer), docx or csv; "
                        "at most MAX_UPLOAD_BYTES (default 25 MB)",
                    },
                    "name": {
                        "type": "string",
                        "maxLength": 255,
                        "description": "the document's name; default: the file's name",
                    },
                },
            },
            "Document": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "chunk_count": {"type": "integer"},
                    "content_type": {
                        "type": "string",
                        "description": "media type of the file it was read from",
                    },
                    "size_bytes": {
                        "type": "integer",
                        "description": "size of that file (of the text, when sent as JSON)",
                    },
                    "created_at": {"type": "string", "format": "date-time"},
                },
            },
            "DocumentAdded": {
                "allOf": [
                    _ref("Document"),
                    {
                        "type": "object",
                        "properties": {
                            "duplicate": {
                                "type": "boolean",
                                "description": "true when the same content was already stored: "
                                "the response describes that document, nothing was added",
                            },
                        },
                    },
                ]
            },
            "DocumentWithText": {
                "allOf": [
                    _ref("Document"),
                    {
                        "type": "object",
                        "properties": {
                            "text": {
                                "type": "string",
                                "description": "the text as read from the file, headings as #",
                            }
                        },
                    },
                ]
            },
            "Employee": {
                "type": "object",
                "properties": {
                    "identifier": {
                        "type": "string",
                        "pattern": "^[a-z0-9_-]{1,64}$",
                        "description": "lowercase letters, digits, _ and -, at most 64 characters",
                    },
                    "display_name": {"type": "string", "maxLength": 100},
                    "personality": {
                        "type": "string",
                        "maxLength": 8000,
                        "description": "tone, focus and limits; layered on top of the "
                        "grounding instructions, never in place of them",
                    },
                    "channels": {"type": "array", "items": {"type": "string"}},
                    "skill_tags": {"type": "array", "items": {"type": "string"}},
                    "autonomy": {"type": "string", "enum": ["off", "semi", "full"]},
                    "effective_autonomy": {
                        "type": "string",
                        "enum": ["off", "semi", "full"],
                        "description": "the autonomy it acts with: a sensitive role is capped "
                        "at semi whatever is configured",
                    },
                    "built_in": {"type": "boolean"},
                    "sensitive": {"type": "boolean"},
                    "sensitivity": {
                        "type": "object",
                        "description": "why the role is (or is not) sensitive",
                        "properties": {
                            "reason": {
                                "type": "string",
                                "enum": ["marker", "built-in", "setting", "error", "none"],
                            },
                            "marker": {"type": ["string", "null"]},
                            "field": {"type": ["string", "null"]},
                            "setting": {
                                "type": ["string", "null"],
                                "description": "SENSITIVE_ROLES_EXTRA or "
                                "SENSITIVE_ROLES_REVIEWED_SAFE when a setting decided",
                            },
                            "explanation": {"type": "string"},
                        },
                    },
                    "created_at": {"type": "string", "format": "date-time"},
                    "updated_at": {"type": "string", "format": "date-time"},
                },
            },
            "MemoryItem": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "role": {"type": "string"},
                    "text": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "source": {"type": "string", "enum": ["owner", "profile", "learned"]},
                    "importance": {"type": "integer", "minimum": 1, "maximum": 5},
                    "created_at": {"type": "string", "format": "date-time"},
                    "similarity": {
                        "type": "number",
                        "description": "cosine similarity to ?query= (only when searching)",
                    },
                },
            },
            "NewMemory": {
                "type": "object",
                "required": ["text"],
                "additionalProperties": False,
                "description": "Unknown fields are refused (422). The same text (ignoring case "
                "and whitespace) twice for one role is 409.",
                "properties": {
                    "text": {"type": "string", "maxLength": 1000},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"},
                        "maxItems": 16,
                    },
                    "source": {
                        "type": "string",
                        "enum": ["owner", "profile", "learned"],
                        "default": "owner",
                    },
                    "importance": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
                },
            },
            "Profile": {
                "type": "object",
                "properties": {
                    "description": {"type": "string", "maxLength": 600},
                    "products": {"type": "string", "maxLength": 600},
                    "tone": {"type": "string", "maxLength": 200},
                    "language": {"type": "string", "description": "ISO 639-1 code, or ''"},
                    "learned_summary": {"type": "string", "readOnly": True},
                    "learned_at": {"type": ["string", "null"], "format": "date-time"},
                    "updated_at": {"type": ["string", "null"], "format": "date-time"},
                    "learned_by": {
                        "type": "string",
                        "enum": ["llm", "extractive"],
                        "description": "POST /profile/learn only: how the summary was made",
                    },
                },
            },
            "RoleContext": {
                "type": "object",
                "properties": {
                    "role": {"type": "string"},
                    "query": {"type": "string"},
                    "text": {
                        "type": "string",
                        "description": "exactly the role context injected into the prompt",
                    },
                    "chars": {"type": "integer"},
                    "budget_chars": {"type": "integer"},
                    "dropped": {
                        "type": "integer",
                        "description": "items left out to keep within the budget",
                    },
                    "items": {"type": "array", "items": _ref("MemoryItem")},
                },
            },
            "EmployeePatch": {
                "type": "object",
                "additionalProperties": False,
                "description": "the fields to change; display_name and personality are "
                "required to create a runtime role. Unknown fields are refused (422).",
                "properties": {
                    "display_name": {"type": "string", "maxLength": 100},
                    "personality": {"type": "string", "maxLength": 8000},
                    "channels": {"type": "array", "items": {"type": "string"}, "maxItems": 32},
                    "skill_tags": {"type": "array", "items": {"type": "string"}, "maxItems": 32},
                    "autonomy": {"type": "string", "enum": ["off", "semi", "full"]},
                },
            },
            "Workflow": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string", "maxLength": 200},
                    "webhook_url": {"type": "string", "format": "uri"},
                    "channels": {
                        "type": "array",
                        "items": {"type": "string", "enum": ["telegram", "whatsapp", "discord"]},
                    },
                    "is_active": {"type": "boolean"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "updated_at": {"type": "string", "format": "date-time"},
                },
            },
            "NewWorkflow": {
                "type": "object",
                "required": ["name", "webhook_url", "channels"],
                "additionalProperties": False,
                "description": "Unknown and read-only fields are refused (422) by name.",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "webhook_url": {
                        "type": "string",
                        "maxLength": 2048,
                        "description": "http:// or https://, with a host and no "
                        "user:password; never a metadata, link-local or unspecified address, "
                        "nor the service itself; loopback and private addresses only with "
                        "WORKFLOW_ALLOW_PRIVATE_TARGETS=true (422 otherwise)",
                    },
                    "channels": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "string", "enum": ["telegram", "whatsapp", "discord"]},
                        "description": "the wired text channels whose replies call it; voice, "
                        "api, slack and email never do and are refused",
                    },
                    "is_active": {"type": "boolean", "default": True},
                },
            },
            "WorkflowPatch": {
                "type": "object",
                "additionalProperties": False,
                "description": "the fields to change, as in NewWorkflow; {} changes nothing",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "webhook_url": {"type": "string", "maxLength": 2048},
                    "channels": {
                        "type": "array",
                        "minItems": 1,
                        "items": {"type": "string", "enum": ["telegram", "whatsapp", "discord"]},
                    },
                    "is_active": {"type": "boolean"},
                },
            },
            "VoiceCall": {
                "type": "object",
                "required": [
                    "id",
                    "call_sid",
                    "caller_hash",
                    "role",
                    "started_at",
                    "ended_at",
                    "end_reason",
                    "turns",
                ],
                "properties": {
                    "id": {"type": "integer", "description": "for ?before= (paging)"},
                    "call_sid": {"type": "string", "description": "the provider's call id"},
                    "caller_hash": {
                        "type": "string",
                        "pattern": "^[0-9a-f]{64}$",
                        "description": "SHA-256 of voice:<the caller's number>: the same "
                        "caller gives the same hash; the number is not kept",
                    },
                    "role": {"type": ["string", "null"], "description": "the role answering"},
                    "started_at": {"type": "string", "format": "date-time"},
                    "ended_at": {"type": ["string", "null"], "format": "date-time"},
                    "end_reason": {"type": ["string", "null"]},
                    "turns": {"type": "array", "items": _ref("VoiceTurn")},
                },
            },
            "VoiceTurn": {
                "type": "object",
                "required": [
                    "turn",
                    "question",
                    "answer",
                    "outcome",
                    "citations",
                    "role",
                    "provider",
                    "model",
                    "language",
                    "stages",
                    "created_at",
                ],
                "properties": {
                    "turn": {"type": "integer"},
                    "question": {"type": ["string", "null"], "description": "as transcribed"},
                    "answer": {"type": ["string", "null"], "description": "the text spoken"},
                    "outcome": {
                        "type": "string",
                        "enum": ["answered", "interrupted", "failed", "hung up"],
                    },
                    "citations": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "number": {"type": "integer"},
                                "document_id": {"type": "integer"},
                                "document_name": {"type": "string"},
                            },
                        },
                    },
                    "role": {"type": ["string", "null"]},
                    "provider": {"type": ["string", "null"]},
                    "model": {"type": ["string", "null"]},
                    "language": {"type": ["string", "null"]},
                    "stages": {
                        "type": "object",
                        "additionalProperties": {"type": "integer"},
                        "description": "milliseconds each stage took: transcript_ms, "
                        "first_sentence_ms, first_audio_ms, first_frame_ms, voice_to_voice_ms, "
                        "answer_ms (those the turn reached), and stalled_ms: the longest the "
                        "caller's playback ran dry once the answer had begun",
                    },
                    "created_at": {"type": "string", "format": "date-time"},
                },
            },
        },
    },
    "security": [{"ApiKey": []}],
    "paths": {
        "/automation-workflows": {
            "get": {
                "summary": "List the automation workflows, oldest first",
                "parameters": [
                    {
                        "name": "channel",
                        "in": "query",
                        "schema": {"type": "string", "enum": ["telegram", "whatsapp", "discord"]},
                        "description": "only workflows this channel triggers",
                    },
                    {
                        "name": "is_active",
                        "in": "query",
                        "schema": {"type": "boolean"},
                        "description": "true or false",
                    },
                ],
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "workflows": {"type": "array", "items": _ref("Workflow")}
                            },
                        },
                        "The workflows",
                    ),
                    "401": PROBLEM,
                    "422": PROBLEM,
                },
            },
            "post": {
                "summary": "Create a workflow: a webhook called after replies on its channels",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("NewWorkflow")}},
                },
                "responses": {
                    "201": _json(_ref("Workflow"), "Created (Location: its URL)"),
                    "400": PROBLEM,
                    "401": PROBLEM,
                    "415": PROBLEM,
                    "422": PROBLEM,
                },
            },
        },
        "/automation-workflows/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "get": {
                "summary": "One workflow",
                "responses": {
                    "200": _json(_ref("Workflow"), "The workflow"),
                    "401": PROBLEM,
                    "404": PROBLEM,
                },
            },
            "patch": {
                "summary": "Change a workflow's fields (is_active turns it on and off)",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("WorkflowPatch")}},
                },
                "responses": {
                    "200": _json(_ref("Workflow"), "Updated"),
                    "400": PROBLEM,
                    "401": PROBLEM,
                    "404": PROBLEM,
                    "415": PROBLEM,
                    "422": PROBLEM,
                },
            },
            "delete": {
                "summary": "Delete a workflow",
                "responses": {"204": {"description": "Deleted"}, "401": PROBLEM, "404": PROBLEM},
            },
        },
        "/profile": {
            "get": {
                "summary": "The business profile (empty fields when never set)",
                "responses": {"200": _json(_ref("Profile"), "The profile"), "401": PROBLEM},
            },
            "patch": {
                "summary": "Set the owner's fields: description, products, tone, language",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("Profile")}},
                },
                "responses": {
                    "200": _json(_ref("Profile"), "The updated profile"),
                    "400": PROBLEM,
                    "401": PROBLEM,
                    "415": PROBLEM,
                    "422": PROBLEM,
                },
            },
        },
        "/profile/learn": {
            "post": {
                "summary": "Rebuild the learned summary from documents and role memory",
                "responses": {
                    "200": _json(_ref("Profile"), "The updated profile"),
                    "401": PROBLEM,
                },
            },
        },
        "/webhook/telegram": {
            "post": {
                "summary": "Telegram Bot API updates (setWebhook points here)",
                "description": "Verified by the X-Telegram-Bot-Api-Secret-Token header, which "
                "must equal TELEGRAM_WEBHOOK_SECRET (no API key). A message is acknowledged "
                "at once and answered through sendMessage; the same update_id is answered "
                "once. Other update kinds are acknowledged and ignored.",
                "security": [],
                "parameters": [
                    {
                        "name": "X-Telegram-Bot-Api-Secret-Token",
                        "in": "header",
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                "responses": {
                    "200": _json({"type": "object"}, "Taken (or ignored): {}"),
                    "400": PROBLEM,
                    "403": PROBLEM,
                    "503": PROBLEM,
                },
            }
        },
        "/webhook/whatsapp": {
            "post": {
                "summary": "Incoming WhatsApp messages from the telephony provider",
                "description": "Form-encoded, as the provider sends it; verified by "
                "X-Twilio-Signature (or X-Telco-Signature): HMAC-SHA1 with TELCO_AUTH_TOKEN "
                "over PUBLIC_BASE_URL + path and the sorted form parameters. Answered "
                "through the Messages API; the same MessageSid is answered once.",
                "security": [],
                "parameters": [
                    {"name": "X-Twilio-Signature", "in": "header", "schema": {"type": "string"}}
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-www-form-urlencoded": {"schema": {"type": "object"}}
                    },
                },
                "responses": {
                    "200": {
                        "description": "Taken: an empty TwiML <Response/>",
                        "content": {"text/xml": {"schema": {"type": "string"}}},
                    },
                    "400": PROBLEM,
                    "403": PROBLEM,
                    "503": PROBLEM,
                },
            }
        },
        "/webhook/voice": {
            "post": {
                "summary": "Incoming calls from the telephony provider (the number's voice URL)",
                "description": "Form-encoded, as the provider sends it (CallSid, From, To, …); "
                "verified like /webhook/whatsapp (403 otherwise, unless "
                "VOICE_ALLOW_UNSIGNED=true). Answered with TwiML that connects the call to the "
                "media stream at VOICE_PUBLIC_URL, else wss://<PUBLIC_BASE_URL's host, else "
                "this request's>:VOICE_PORT (ws:// for http), with the caller and the call id "
                "as <Parameter>s. 503 without VOICEAI_API_KEY.",
                "security": [],
                "parameters": [
                    {"name": "X-Twilio-Signature", "in": "header", "schema": {"type": "string"}}
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-www-form-urlencoded": {"schema": {"type": "object"}}
                    },
                },
                "responses": {
                    "200": {
                        "description": "<Response><Connect><Stream url=…> with the Parameters "
                        "caller and call_sid",
                        "content": {"text/xml": {"schema": {"type": "string"}}},
                    },
                    "400": PROBLEM,
                    "403": PROBLEM,
                    "503": PROBLEM,
                },
            }
        },
        "/webhook/discord": {
            "post": {
                "summary": "Discord interactions (the application's Interactions Endpoint URL)",
                "description": "Verified by X-Signature-Ed25519 over X-Signature-Timestamp + "
                "body with DISCORD_PUBLIC_KEY (401 otherwise). PING is answered with PONG; "
                "/ask with a deferred response (type 5), then the answer replaces it.",
                "security": [],
                "parameters": [
                    {"name": "X-Signature-Ed25519", "in": "header", "schema": {"type": "string"}},
                    {
                        "name": "X-Signature-Timestamp",
                        "in": "header",
                        "schema": {"type": "string", "pattern": "^[0-9]+$"},
                        "description": "whole Unix seconds, at most 5 minutes from the "
                        "server's clock either way (401 otherwise)",
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                "responses": {
                    "200": _json(
                        {"type": "object", "properties": {"type": {"type": "integer"}}},
                        "An interaction response: PONG (1), deferred (5) or a message (4)",
                    ),
                    "400": PROBLEM,
                    "401": PROBLEM,
                },
            }
        },
        "/health": {
            "get": {
                "summary": "Health, version, database, mode and active providers",
                "security": [],
                "responses": {"200": _json({"type": "object"}, "The service's state")},
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")},
            }
        },
        "/chat/stream": {
            "post": {
                "summary": "The same answer as server-sent events",
                "description": (
                    "`token` events (`{\"text\": …}`) as the answer is written, then one `done` "
                    "event whose data is the ChatAnswer /chat returns. A failure after the first "
                    "event arrives as an `error` event whose data is a problem."
                ),
                "parameters": [
                    {"name": "question", "in": "query", "schema": {"type": "string"}},
                    {"name": "role", "in": "query", "schema": {"type": "string"}},
                    USER_PARAMETER,
                ],
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": _ref("ChatQuestion")}},
                },
                "responses": {
                    "200": {
                        "description": "An event stream: `token` events, then one `done` or "
                        "`error` event",
                        "content": {
                            "text/event-stream": {
                                # the stream modelled as the list of its events, each event
                                # as an object of its SSE fields (OpenAPI 3.2 models
                                # text/event-stream so; 3.1 has no itemSchema)
                                "schema": {
                                    "type": "array",
                                    "items": _ref("ChatStreamEvent"),
                                    "minItems": 1,
                                }
                            }
                        },
                    },
                    "400": PROBLEM, "401": PROBLEM, "404": PROBLEM, "422": PROBLEM,
                    "502": PROBLEM, "503": PROBLEM,
                },
            }
        },
        "/usage": {
            "get": {
                "summary": "Tokens spent by day, month, role and provider, and the budgets",
                "responses": {"200": _json({"type": "object"}, "The usage summary")},
            }
        },
        "/voice/calls": {
            "get": {
                "summary": "The latest phone calls, newest first, each with its turns",
                "description": "Kept 90 days. The caller is shown only as a hash.",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "default": 20, "minimum": 1, "maximum": 100},
                    },
                    {
                        "name": "before",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1},
                        "description": "calls that began before this one (next_before of the "
                        "last page)",
                    },
                ],
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "required": ["calls", "next_before"],
                            "properties": {
                                "calls": {"type": "array", "items": _ref("VoiceCall")},
                                "next_before": {"type": ["integer", "null"]},
                            },
                        },
                        "The calls",
                    ),
                    "401": PROBLEM,
                    "422": PROBLEM,
                },
            }
        },
        "/chat": {
            "post": {
                "summary": "Answer a question from the documents, with citations",
                "parameters": [
                    {
                        "name": "question",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "the question (or send it in the JSON body)",
                    },
                    {
                        "name": "role",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "answer as this AI employee",
                    },
                    USER_PARAMETER,
                ],
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": _ref("ChatQuestion")}},
                },
                "responses": {
                    "200": _json(_ref("ChatAnswer"), "The answer and its sources"),
                    "400": PROBLEM,
                    "401": PROBLEM,
                    "404": PROBLEM,
                    "422": PROBLEM,
                    "502": PROBLEM,
                    "503": PROBLEM,
                },
            }
        },
        "/documents": {
            "get": {
                "summary": "List the documents, oldest first",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "documents": {"type": "array", "items": _ref("Document")}
                            },
                        },
                        "The documents",
                    ),
                    "401": PROBLEM,
                },
            },
            "post": {
                "summary": "Add a document: JSON text, or an uploaded file",
                "description": "The same content (after reading the file) is stored once: "
                "adding it again answers 200 with duplicate: true.",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": _ref("NewDocument")},
                        "multipart/form-data": {"schema": _ref("DocumentUpload")},
                    },
                },
                "responses": {
                    "201": _json(_ref("DocumentAdded"), "Stored (Location: /documents/{id})"),
                    "200": _json(_ref("DocumentAdded"), "Already stored (duplicate: true)"),
                    "400": PROBLEM,
                    "401": PROBLEM,
                    "413": PROBLEM,
                    "415": PROBLEM,
                    "422": PROBLEM,
                    "502": PROBLEM,
                    "503": PROBLEM,
                },
            },
        },
        "/employees": {
            "get": {
                "summary": "List the AI employees (the first call seeds the nine built-in roles)",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "employees": {"type": "array", "items": _ref("Employee")}
                            },
                        },
                        "The roles, built-in first",
                    ),
                    "401": PROBLEM,
                },
            }
        },
        "/employees/{role}": {
            "parameters": [
                {"name": "role", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "get": {
                "summary": "One AI employee",
                "responses": {
                    "200": _json(_ref("Employee"), "The role"),
                    "401": PROBLEM,
                    "404": PROBLEM,
                    "422": PROBLEM,
                },
            },
            "patch": {
                "summary": "Change a role's fields, or create a runtime role",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("EmployeePatch")}},
                },
                "responses": {
                    "200": _json(_ref("Employee"), "Updated"),
                    "201": _json(_ref("Employee"), "Created (Location: /employees/{role})"),
                    "400": PROBLEM,
                    "401": PROBLEM,
                    "415": PROBLEM,
                    "422": PROBLEM,
                },
            },
        },
        "/employees/{role}/memory": {
            "parameters": [ROLE_PARAMETER],
            "get": {
                "summary": "A role's memory; search it by meaning and by tags",
                "parameters": [
                    {
                        "name": "query",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "nearest in meaning first",
                    },
                    {
                        "name": "tags",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "comma-separated: items with at least one of the tags",
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 500},
                    },
                ],
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "role": {"type": "string"},
                                "memory": {"type": "array", "items": _ref("MemoryItem")},
                            },
                        },
                        "The items",
                    ),
                    "401": PROBLEM,
                    "404": PROBLEM,
                    "422": PROBLEM,
                },
            },
            "post": {
                "summary": "Add a memory item to a role",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("NewMemory")}},
                },
                "responses": {
                    "201": _json(_ref("MemoryItem"), "Stored (Location: its URL)"),
                    "400": PROBLEM,
                    "401": PROBLEM,
                    "404": PROBLEM,
                    "409": PROBLEM,
                    "415": PROBLEM,
                    "422": PROBLEM,
                },
            },
        },
        "/employees/{role}/memory/{id}": {
            "parameters": [
                ROLE_PARAMETER,
                {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
            ],
            "delete": {
                "summary": "Delete a memory item",
                "responses": {"204": {"description": "Deleted"}, "401": PROBLEM, "404": PROBLEM},
            },
        },
        "/employees/{role}/context": {
            "parameters": [
                ROLE_PARAMETER,
                {"name": "query", "in": "query", "required": True, "schema": {"type": "string"}},
            ],
            "get": {
                "summary": "The role context the role injects into a prompt for the query",
                "responses": {
                    "200": _json(_ref("RoleContext"), "The text and the items it holds"),
                    "401": PROBLEM,
                    "404": PROBLEM,
                    "422": PROBLEM,
                },
            },
        },
        "/documents/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "get": {
                "summary": "One document, with its text",
                "responses": {
                    "200": _json(_ref("DocumentWithText"), "The document"),
                    "401": PROBLEM,
                    "404": PROBLEM,
                },
            },
            "delete": {
                "summary": "Delete a document and its chunks; answers cite it no more",
                "responses": {
                    "204": {"description": "Deleted"},
                    "401": PROBLEM,
                    "404": PROBLEM,
                },
            },
        },
    },
}

# autonomy and outbound actions (ragio/http/actions.py)
SPEC["components"]["schemas"].update(openapi_actions.SCHEMAS)
SPEC["paths"].update(openapi_actions.PATHS)
SPEC["components"]["schemas"]["ChatAnswer"]["properties"]["action"] = openapi_actions.PROPOSED


@blueprint.get("/openapi.json")
async def openapi() -> dict[str, Any]:
    return SPEC
