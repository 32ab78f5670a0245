"""Rule 13: which roles are sensitive, and what that forces.

A role is sensitive when a marker word appears as a whole word in its identifier,
display name or skill tags. Words are split on anything that is not a letter or a
digit (``_``, ``-``, spaces, ...), at lower-to-upper case changes and between letters
and digits: ``tax_lawyer_bot``, ``Medical-Intake`` and ``immigration helper`` are
sensitive; ``taxonomy_bot``, ``healthy_recipes`` and ``lawn_care_agent`` are not.

Settings, passed in as arguments:

- ``SENSITIVE_ROLES_EXTRA`` makes the listed roles sensitive, markers or not.
- ``SENSITIVE_ROLES_REVIEWED_SAFE`` exempts listed *runtime* roles from marker-word
  sensitivity only. It never exempts a built-in role, nor a role listed in
  ``SENSITIVE_ROLES_EXTRA``.

Built-in sensitive roles (``BUILT_IN_SENSITIVE``: decided from the built-in
definitions, so finance and hr) stay sensitive whatever their current tags or the
settings say. Any internal error counts as sensitive (fail closed).

A sensitive role answers in reasoning mode, passes the grounding check, and its
autonomy is capped at ``semi`` (``effective_autonomy``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from ragcore.employees.builtin import BUILT_IN
from ragcore.employees.roles import BUILT_IN_ROLES, Autonomy, Role, autonomy_rank

MARKERS = frozenset(
    {
        # law
        "legal", "law", "laws", "lawyer", "lawyers", "attorney", "attorneys", "solicitor",
        "paralegal", "litigation", "notary",
        # health
        "medical", "medicine", "health", "healthcare", "clinical", "clinic", "clinician",
        "patient", "patients", "doctor", "nurse", "nursing", "diagnosis", "therapy",
        "therapist", "pharmacy", "pharmacist", "prescription", "dental", "dentist",
        "psychiatric", "psychology",
        # tax, money advice, insurance
        "tax", "taxes", "taxation", "vat", "irs", "insurance", "insurer",
        "investment", "investments", "securities", "pension", "pensions", "mortgage",
        "loan", "loans",
        # immigration
        "immigration", "visa", "visas", "asylum", "citizenship",
        # regulation
        "compliance", "regulatory", "regulation", "regulations", "gdpr", "hipaa",
    }
)  # fmt: skip

SETTING_EXTRA = "SENSITIVE_ROLES_EXTRA"
SETTING_REVIEWED_SAFE = "SENSITIVE_ROLES_REVIEWED_SAFE"

_NOT_WORD = re.compile(r"[\W_]+")
_BOUNDARY = re.compile(
    r"(?<=[a-z])(?=[A-Z])"  # medicalIntake
    r"|(?<=[A-Z])(?=[A-Z][a-z])"  # HRLegal
    r"|(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])"  # tax2024
)


@attrs.frozen
class Sensitivity:
    """Whether a role is sensitive, and why.

    ``reason`` is one of ``"marker"`` (``marker`` found in ``field``), ``"built-in"``
    (a built-in sensitive role), ``"setting"`` (``setting`` names the variable),
    ``"error"`` (the check failed, so the role is treated as sensitive) or ``"none"``.
    A runtime role exempted by ``SENSITIVE_ROLES_REVIEWED_SAFE`` is not sensitive,
    with ``reason="setting"``, the marker that was waived and that setting.
    """

    sensitive: bool
    reason: str
    marker: str | None = None
    field: str | None = None
    setting: str | None = None

    @property
    def reasoning_mode(self) -> bool:
        return self.sensitive

    @property
    def grounding_check(self) -> bool:
        return self.sensitive

    def explain(self) -> str:
        if self.reason == "error":
            return "sensitive: the sensitivity check failed, so the role is treated as sensitive"
        found = f"marker word {self.marker!r} in its {self.field}" if self.marker else ""
        if self.reason == "built-in":
            why = f"{found}; " if found else ""
            return f"sensitive: {why}a built-in sensitive role, which can never be exempted"
        if self.setting == SETTING_EXTRA:
            return f"sensitive: listed in {SETTING_EXTRA}" + (f" (and {found})" if found else "")
        if self.setting == SETTING_REVIEWED_SAFE:
            return f"not sensitive: {found}, exempted by {SETTING_REVIEWED_SAFE}"
        if self.sensitive:
            return f"sensitive: {found}"
        return "not sensitive: no marker word and no setting"


def words(text: str) -> list[str]:
    """The whole words of ``text``, lowercased, as the marker check sees them."""
    out: list[str] = []
    for part in _NOT_WORD.split(text):
        out.extend(piece.lower() for piece in _BOUNDARY.split(part) if piece)
    return out


def find_marker(role: Role) -> tuple[str, str] | None:
    """The first marker word in the role's identifier, display name or skill tags,
    with the field it was found in."""
    fields: Iterable[tuple[str, str]] = (
        ("identifier", role.identifier),
        ("display name", role.display_name),
        *(("skill tags", tag) for tag in role.skill_tags),
    )
    for field, text in fields:
        for word in words(text):
            if word in MARKERS:
                return word, field
    return None


def _assess(role: Role, extra: Iterable[str], reviewed_safe: Iterable[str]) -> Sensitivity:
    identifier = role.identifier.lower()
    found = find_marker(role)
    marker, field = found if found else (None, None)
    if identifier in {name.lower() for name in extra}:
        return Sensitivity(True, "setting", marker, field, SETTING_EXTRA)
    if identifier in BUILT_IN_SENSITIVE:
        return Sensitivity(True, "built-in", marker, field)
    if marker is None:
        return Sensitivity(False, "none")
    runtime = identifier not in BUILT_IN_ROLES
    if runtime and identifier in {name.lower() for name in reviewed_safe}:
        return Sensitivity(False, "setting", marker, field, SETTING_REVIEWED_SAFE)
    return Sensitivity(True, "marker", marker, field)


def assess_sensitivity(
    role: Role, extra: Iterable[str] = (), reviewed_safe: Iterable[str] = ()
) -> Sensitivity:
    """Rule 13 for ``role``; ``extra`` and ``reviewed_safe`` are the two settings."""
    try:
        return _assess(role, extra, reviewed_safe)
    except Exception:  # fail closed: a role we cannot judge is sensitive
        return Sensitivity(True, "error")


def effective_autonomy(configured: Autonomy, sensitivity: Sensitivity) -> Autonomy:
    """The autonomy a role acts with: a sensitive role is capped at ``semi``."""
    if sensitivity.sensitive and autonomy_rank(configured) > autonomy_rank("semi"):
        return "semi"
    return configured


def _built_in_sensitive() -> frozenset[str]:
    return frozenset(name for name, role in BUILT_IN.items() if find_marker(role) is not None)


# Fixed from the built-in definitions: editing a built-in role's tags later does not
# make it less sensitive.
BUILT_IN_SENSITIVE = _built_in_sensitive()
