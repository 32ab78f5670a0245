"""``docs/roles.md``, rendered from the role definitions so the owner reads what the code does.

Regenerate with::

    .venv/bin/python -c "from ragcore.employees.doc import render_roles_doc as r; \
        print(r(), end='')" > docs/roles.md
"""

from __future__ import annotations

from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.layering import REASONING_INSTRUCTIONS, system_instructions
from ragcore.employees.roles import AUTONOMY_LEVELS, AUTONOMY_MEANINGS
from ragcore.employees.sensitivity import (
    BUILT_IN_SENSITIVE,
    MARKERS,
    SETTING_EXTRA,
    SETTING_REVIEWED_SAFE,
    assess_sensitivity,
    effective_autonomy,
)
from ragcore.generation import GROUNDING_INSTRUCTIONS

CONTEXT_PLACEHOLDER = (
    "(the role's context for the question: its owner instructions, the business profile "
    "and the most relevant learned patterns)"
)


def _fence(text: str) -> str:
    return f"```text\n{text}\n```"


def render_roles_doc() -> str:
    out = [
        "# AI employees: the nine roles and the prompts they get",
        "",
        "<!-- Generated from src/ragcore/employees by ragcore.employees.doc.render_roles_doc;"
        " tests/core/test_role_prompts.py checks that this file matches. -->",
        "",
        "The service can answer as one of nine AI employees. Ask as a role with "
        "`POST /chat?role=<identifier>`; without `role` the standard grounding instructions "
        "apply alone. A role adds its personality and its role context *after* the grounding "
        "instructions and never replaces them, so every role answers only from your "
        "documents and cites them.",
        "",
        "## The grounding instructions every answer gets",
        "",
        _fence(GROUNDING_INSTRUCTIONS),
        "",
        "The chat pipeline adds one line after these naming the language of the answer.",
        "",
        "## Autonomy",
        "",
        "Autonomy governs outbound actions (messages, emails, webhooks), not answers:",
        "",
        *(f"- `{level}`: {AUTONOMY_MEANINGS[level]}." for level in AUTONOMY_LEVELS),
        "",
        "A sensitive role is capped at `semi`: whatever is configured, it never acts "
        "without your YES.",
        "",
        "## Sensitive roles",
        "",
        "A role is sensitive when one of these marker words appears as a whole word in its "
        "identifier, display name or skill tags (words are split on `_`, `-`, spaces and "
        "changes of case, so `tax_lawyer_bot`, `Medical-Intake` and `immigration helper` are "
        "sensitive, while `taxonomy_bot`, `healthy_recipes` and `lawn_care_agent` are not):",
        "",
        ", ".join(f"`{m}`" for m in sorted(MARKERS)) + ".",
        "",
        f"- `{SETTING_EXTRA}` makes the listed roles sensitive.",
        f"- `{SETTING_REVIEWED_SAFE}` exempts the listed runtime roles (roles you created "
        f"with `PATCH /employees/{{role}}`) from marker-word sensitivity. It never exempts a "
        f"built-in role or a role listed in `{SETTING_EXTRA}`.",
        "- Built-in sensitive roles can never be exempted: "
        + ", ".join(f"`{name}`" for name in sorted(BUILT_IN_SENSITIVE))
        + ". They stay sensitive even if their skill tags are edited.",
        "- If the check itself fails, the role is treated as sensitive.",
        "",
        "A sensitive role answers in reasoning mode (it reasons step by step privately and "
        "returns only the final answer), each answer passes a second grounding check "
        "against the sources, and its autonomy is capped at `semi`. Reasoning mode adds:",
        "",
        _fence(REASONING_INSTRUCTIONS),
        "",
        "## The nine roles",
        "",
        "| Identifier | Display name | Autonomy | Sensitive |",
        "|---|---|---|---|",
    ]
    for role in BUILT_IN.values():
        sens = assess_sensitivity(role)
        out.append(
            f"| `{role.identifier}` | {role.display_name} | "
            f"{effective_autonomy(role.autonomy, sens)} | {'yes' if sens.sensitive else 'no'} |"
        )
    for role in BUILT_IN.values():
        sens = assess_sensitivity(role)
        out += [
            "",
            f"### {role.display_name} (`{role.identifier}`)",
            "",
            "Personality:",
            "",
            f"> {role.personality}",
            "",
            f"- Channels: {', '.join(f'`{c}`' for c in role.channels)}",
            f"- Skill tags: {', '.join(f'`{t}`' for t in role.skill_tags)}",
            f"- Autonomy: `{effective_autonomy(role.autonomy, sens)}`",
            f"- Sensitive: {'yes' if sens.sensitive else 'no'} ({sens.explain()})",
            "- Starter memory:",
            *(f"  - {seed}" for seed in role.memory_seeds),
            "",
            "Full system prompt (the role context is filled in for each question):",
            "",
            _fence(system_instructions(role, CONTEXT_PLACEHOLDER, sensitivity=sens)),
        ]
    out += [
        "",
        "## Roles you create",
        "",
        "`PATCH /employees/{role}` with a new identifier (lowercase letters, digits, `_` and "
        "`-`, at most 64 characters) creates a runtime role. It gets the same layering: the "
        "grounding instructions first, then its personality and role context, plus "
        "reasoning mode if it is sensitive.",
        "",
    ]
    return "\n".join(out)
