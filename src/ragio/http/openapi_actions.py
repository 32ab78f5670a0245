"""The autonomy and action routes in /openapi.json (merged into ``openapi.SPEC``)."""

from __future__ import annotations

from typing import Any

PROBLEM = {"$ref": "#/components/responses/Problem"}
KINDS = ["webhook", "email", "chatops"]
LEVELS = ["off", "semi", "full"]
CHANNELS = ["telegram", "whatsapp", "discord"]
STATUSES = ["refused", "pending", "executing", "executed", "failed", "rejected", "expired"]
ID_PARAMETER = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "the action id: 10 letters and digits, read case-insensitively",
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


PROPOSED = {
    "type": ["object", "null"],
    "description": "the outbound action the role's reply proposed, after the gate; null when "
    "none was proposed (or the proposal was dropped)",
    "properties": {
        "id": {"type": "string"},
        "kind": {"type": "string", "enum": KINDS},
        "status": {"type": "string", "enum": STATUSES},
        "reason": {"type": "string"},
    },
}

SCHEMAS: dict[str, Any] = {
    "Autonomy": {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": LEVELS, "default": "off"},
            "approval_channel": {"type": ["string", "null"], "enum": [*CHANNELS, None]},
            "approval_target": {
                "type": ["string", "null"],
                "description": "the owner's Telegram chat id, WhatsApp number (+E.164) or "
                "Discord user id",
            },
            "allowed_kinds": {"type": "array", "items": {"type": "string", "enum": KINDS}},
            "sensitive_roles": {
                "type": "string",
                "enum": ["semi", "off"],
                "description": "what sensitive roles are held to, whatever the mode",
            },
            "approval_ttl_hours": {"type": "integer", "readOnly": True},
            "kinds": {
                "type": "object",
                "readOnly": True,
                "description": "what each kind can reach under the settings (target names, "
                "never URLs)",
            },
            "updated_at": {"type": ["string", "null"], "format": "date-time"},
        },
    },
    "AutonomyUpdate": {
        "type": "object",
        "additionalProperties": False,
        "description": "the fields to change; unknown fields and values are 422, naming the "
        "allowed ones. approval_channel null clears the owner (decisions through the API "
        "only).",
        "properties": {
            "mode": {"type": "string", "enum": LEVELS},
            "approval_channel": {"type": ["string", "null"], "enum": [*CHANNELS, None]},
            "approval_target": {"type": ["string", "null"]},
            "allowed_kinds": {"type": "array", "items": {"type": "string", "enum": KINDS}},
            "sensitive_roles": {"type": "string", "enum": ["semi", "off"]},
        },
    },
    "NewAction": {
        "type": "object",
        "required": ["kind"],
        "description": "webhook: target (a NAME from WEBHOOK_TARGETS) and data; email: to, "
        "subject, body; chatops: text. role: act as that role (its autonomy and "
        "sensitivity apply).",
        "properties": {
            "kind": {"type": "string", "enum": KINDS},
            "role": {"type": "string"},
            "target": {"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"},
            "data": {"type": "object"},
            "to": {"type": "string", "format": "email"},
            "subject": {"type": "string", "maxLength": 200},
            "body": {"type": "string", "maxLength": 10000},
            "text": {"type": "string", "maxLength": 4000},
        },
    },
    "Action": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "kind": {"type": "string", "enum": KINDS},
            "status": {"type": "string", "enum": STATUSES},
            "reason": {"type": "string"},
            "summary": {"type": "string"},
            "action": {"type": "object"},
            "role": {"type": ["string", "null"]},
            "origin": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "expires_at": {"type": ["string", "null"], "format": "date-time"},
            "decided_at": {"type": ["string", "null"], "format": "date-time"},
            "decided_by": {"type": ["string", "null"]},
            "finished_at": {"type": ["string", "null"], "format": "date-time"},
        },
    },
    "ActionLogEntry": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "at": {"type": "string", "format": "date-time"},
            "action_id": {"type": "string"},
            "event": {"type": "string"},
            "detail": {"type": "string"},
            "kind": {"type": "string"},
            "summary": {"type": "string"},
            "role": {"type": ["string", "null"]},
            "origin": {"type": "string"},
            "status": {"type": "string", "enum": STATUSES},
        },
    },
}

PATHS: dict[str, Any] = {
    "/autonomy": {
        "get": {
            "summary": "The autonomy setting and what each action kind can reach",
            "responses": {"200": _json(_ref("Autonomy"), "The setting"), "401": PROBLEM},
        },
        "post": {
            "summary": "Change the autonomy setting: mode, the owner for approvals, kinds",
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref("AutonomyUpdate")}},
            },
            "responses": {
                "200": _json(_ref("Autonomy"), "The setting as saved"),
                "400": PROBLEM,
                "401": PROBLEM,
                "415": PROBLEM,
                "422": PROBLEM,
            },
        },
    },
    "/actions": {
        "post": {
            "summary": "Submit an outbound action; it goes through the autonomy gate",
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref("NewAction")}},
            },
            "responses": {
                "200": _json(_ref("Action"), "Executed (full autonomy)"),
                "202": _json(_ref("Action"), "Held for the owner's approval (semi)"),
                "400": PROBLEM,
                "401": PROBLEM,
                "403": PROBLEM,
                "404": PROBLEM,
                "415": PROBLEM,
                "422": PROBLEM,
                "502": PROBLEM,
            },
        },
    },
    "/actions/{id}": {
        "parameters": [ID_PARAMETER],
        "get": {
            "summary": "One action",
            "responses": {
                "200": _json(_ref("Action"), "The action"),
                "401": PROBLEM,
                "404": PROBLEM,
            },
        },
    },
    "/autonomy/pending": {
        "get": {
            "summary": "The actions waiting for the owner, oldest first",
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "properties": {"pending": {"type": "array", "items": _ref("Action")}},
                    },
                    "The held actions",
                ),
                "401": PROBLEM,
            },
        },
    },
    "/autonomy/pending/{id}/approve": {
        "parameters": [ID_PARAMETER],
        "post": {
            "summary": "Approve a held action: it is sent now",
            "responses": {
                "200": _json(_ref("Action"), "Approved and sent"),
                "401": PROBLEM,
                "404": PROBLEM,
                "409": PROBLEM,
                "410": PROBLEM,
                "502": PROBLEM,
            },
        },
    },
    "/autonomy/pending/{id}/reject": {
        "parameters": [ID_PARAMETER],
        "post": {
            "summary": "Reject a held action: nothing is sent",
            "responses": {
                "200": _json(_ref("Action"), "Rejected"),
                "401": PROBLEM,
                "404": PROBLEM,
                "409": PROBLEM,
                "410": PROBLEM,
            },
        },
    },
    "/autonomy/log": {
        "get": {
            "summary": "Every decision and result, newest first",
            "parameters": [
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "default": 50, "maximum": 500},
                },
                {
                    "name": "before",
                    "in": "query",
                    "schema": {"type": "integer"},
                    "description": "entries with ids below this (next_before of the last page)",
                },
                {
                    "name": "action",
                    "in": "query",
                    "schema": {"type": "string"},
                    "description": "only this action's entries",
                },
            ],
            "responses": {
                "200": _json(
                    {
                        "type": "object",
                        "properties": {
                            "entries": {"type": "array", "items": _ref("ActionLogEntry")},
                            "next_before": {"type": ["integer", "null"]},
                        },
                    },
                    "The log",
                ),
                "401": PROBLEM,
                "422": PROBLEM,
            },
        },
    },
}
