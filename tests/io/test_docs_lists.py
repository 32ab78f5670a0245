"""The lists in the docs that drift as the code grows are checked against the code: the
migrations, the commands, the settings, the routes open without the key, a turn's
stages. (The roles' prompts are generated: tests/core/test_role_prompts.py; the routes
and effects have their own checks; tests/io/test_docs_examples.py checks every JSON
example.)"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from ragcore.chat.timings import FIRST_TEXT, FIRST_TEXT_MEANS, STAGES
from ragcore.settings import SETTINGS
from ragio.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MIGRATIONS = ROOT / "src" / "ragio" / "db" / "migrations"


def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    ends = [m.start() for m in re.finditer(rf"^#{{1,{len(level)}}} ", rest, re.MULTILINE)]
    return rest[: ends[0]] if ends else rest


def _first_column(section: str) -> list[str]:
    """The first cell of each body row of the section's first table, backticks kept."""
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [row.split("|")[1].strip() for row in rows[2:]]


def test_the_migrations_table_lists_every_migration_in_order():
    files = sorted(path.stem for path in MIGRATIONS.glob("*.sql"))
    table = _section(_doc("operations.md"), "### Migrations and the advisory lock")
    assert [cell.strip("`") for cell in _first_column(table)] == files


def test_the_commands_table_lists_every_command():
    parser = build_parser()
    [subparsers] = [a for a in parser._actions if a.dest == "command"]
    commands = set()
    for name, sub in subparsers.choices.items():
        nested = [a for a in sub._actions if getattr(a, "choices", None) and a.dest == "action"]
        commands |= {f"{name} {n}" for n in nested[0].choices} if nested else {name}
    table = _section(_doc("operations.md"), "## Commands")
    documented = set()
    for cell in _first_column(table):
        words = [w for w in cell.strip("`").split()[1:] if re.fullmatch(r"[a-z][a-z-]*", w)]
        documented.add(" ".join(words))
    assert documented == commands


def test_every_setting_is_documented_and_every_documented_setting_exists():
    text = _doc("operations.md")
    names = {s.name for s in SETTINGS}
    first_cells = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", " ".join(first_cells)))
    missing = names - documented
    assert not missing, f"settings missing from docs/operations.md: {sorted(missing)}"
    unknown = {n for n in documented - names if "_" in n}
    assert not unknown, f"docs/operations.md documents settings that do not exist: {unknown}"


def test_the_spec_the_code_cites_is_in_the_repository():
    spec = _doc("SPEC.md")
    assert spec.startswith("# Role-Based RAG Chat Service: Interface Specification")
    for section in ("## 1. What the service does", "### Behaviour rules"):
        assert section in spec


def test_the_effects_table_is_generated_from_the_registry():
    from ragio.registry import effects_doc

    text = _doc("architecture.md")
    start = text.index("-->\n", text.index("<!-- effects:")) + len("-->\n")
    table = text[start : text.index("<!-- /effects -->")]
    assert table == effects_doc(), (
        "docs/architecture.md's effects table is out of date; regenerate it from "
        "ragio.registry.effects_doc()"
    )


async def test_the_route_index_in_api_md_is_the_served_schema(api):
    from ragcore.api.routes_doc import render_routes

    document = (await api.get("/openapi.json")).json()
    text = _doc("api.md")
    start = text.index("-->\n", text.index("<!-- routes:")) + len("-->\n")
    table = text[start : text.index("<!-- /routes -->")]
    assert table == render_routes(document), (
        "docs/api.md's route index is out of date; regenerate it with "
        "ragcore.api.routes_doc.render_routes from the served /openapi.json"
    )


def test_every_module_name_and_source_path_in_the_docs_exists():
    """A rule moved to another module leaves no doc pointing at where it was."""
    missing = []
    for name in ("architecture.md", "operations.md", "api.md", "../README.md"):
        text = _doc(name)
        for dotted in set(re.findall(r"\b((?:ragcore|ragio|voiceio)\.[A-Za-z_][\w.]*\w)", text)):
            if not _resolves(dotted):
                missing.append(f"{name}: {dotted}")
        for path in set(re.findall(r"`((?:ragcore|ragio|voiceio)/[\w/.]+)`", text)):
            if "NNN" not in path and not (ROOT / "src" / path).exists():
                missing.append(f"{name}: {path}")
    assert not missing, "the docs name what the code no longer has: " + ", ".join(missing)


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_the_routes_open_without_the_key_are_the_ones_the_docs_name():
    """Where the docs say which routes need no SERVICE_API_KEY, they name each one the app
    leaves open (``ragio.http.app.OPEN_PATHS`` and ``OPEN_PREFIXES``)."""
    from ragio.http import metrics
    from ragio.http.app import OPEN_PATHS, OPEN_PREFIXES

    open_routes = {*OPEN_PATHS, *(prefix + "*" for prefix in OPEN_PREFIXES)}
    authentication = _section(_doc("api.md"), "## Authentication").split("```")[0]
    named = set(re.findall(r"`(/[^`\s]*)`", authentication))
    assert named == open_routes | {metrics.PATH}  # /metrics: with METRICS_PUBLIC=true
    for name in ("../README.md", "operations.md", "../deploy/README.md"):
        for paragraph in re.split(r"\n\s*\n|\n- |\n\| ", _doc(name)):
            if re.search(r"every\s+route\s+(but|except)", paragraph):
                named = set(re.findall(r"`(/[^`\s]*)`", paragraph))
                unnamed = open_routes - named - {"/health/live", "/health/ready"}
                assert not unnamed, f"{name} leaves {unnamed} out of: {paragraph!r}"


def test_the_readme_names_every_debian_package_the_test_command_installs():
    tree = ast.parse((ROOT / "scripts" / "dev.py").read_text(encoding="utf-8"))
    [packages] = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["TEST_PACKAGES"]
    ]
    readme = " ".join(_doc("../README.md").split())
    said = readme[readme.index("also installs the Debian packages") :].split(". ")[0]
    missing = {
        p for p in packages.values() if not re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", said)
    }
    assert not missing, f"README.md's test command installs {sorted(missing)} too"


def test_the_turn_stages_table_says_each_stage_as_the_api_schema_does():
    section = _section(_doc("api.md"), "## Conversations: GET /conversations")
    table = section[section.index("| Stage |") :]
    rows = {cell.strip("`"): means for cell, means in _rows(table)}
    assert rows == {**STAGES, FIRST_TEXT: rows.get(FIRST_TEXT)}
    assert rows[FIRST_TEXT].startswith(FIRST_TEXT_MEANS)


def _rows(table: str) -> list[tuple[str, str]]:
    """The first two cells of each body row of ``table`` (up to its first blank line)."""
    lines = table.split("\n\n", 1)[0].splitlines()
    return [(row.split("|")[1].strip(), row.split("|")[2].strip()) for row in lines[2:]]
