"""The architecture guards bite: the import contract and the OpenAPI description."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragcore.api.operations import declared
from ragio.http.app import create_app
from ragio.http.spec import app_routes

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
RUFF = Path(sys.executable).parent / "ruff"


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def test_the_real_tree_keeps_the_contracts(tmp_path):
    result = lint_imports(copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_io_import_planted_in_the_core_breaks_the_contract(tmp_path):
    tree = copy_tree(tmp_path)
    planted = tree / "src" / "ragcore" / "chat" / "citations.py"
    planted.write_text("import trio  # planted\n" + planted.read_text())
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "ragcore is pure" in result.stdout and "BROKEN" in result.stdout
    assert "ragcore.chat.citations -> trio" in result.stdout


def test_a_runner_import_planted_in_the_core_breaks_the_layers(tmp_path):
    tree = copy_tree(tmp_path)
    planted = tree / "src" / "ragcore" / "settings.py"
    planted.write_text("import ragio.runner  # planted\n" + planted.read_text())
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "ragcore.settings -> ragio.runner" in result.stdout


def ruff(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(RUFF), "check", "--no-cache", "--output-format", "concise", "src"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
    )


def plant(tree: Path, module: str, code: str) -> None:
    """Append ``code`` to ``module`` (a path under src) inside a function, as a slip would."""
    planted = tree / "src" / module
    body = textwrap.indent(textwrap.dedent(code).strip(), "    ")
    planted.write_text(planted.read_text() + f"\n\ndef _planted() -> object:\n{body}\n")


@pytest.mark.parametrize(
    ("code", "banned"),
    [
        ("from datetime import datetime\nreturn datetime.now()", "`datetime.datetime.now`"),
        ("import datetime\nreturn datetime.date.today()", "`datetime.date.today`"),
        ("import os\nreturn os.environ['HOME']", "`os.environ`"),
        ("import os\nreturn os.getenv('HOME')", "`os.getenv`"),
        ("import random\nreturn random.random()", "`random`"),
        ("import uuid\nreturn uuid.uuid4()", "`uuid`"),
        ("return open('/etc/hostname').read()", "PTH123 `open()`"),
    ],
)
def test_the_clock_environment_randomness_or_a_file_read_in_the_core_fails_ruff(
    tmp_path, code, banned
):
    """What lint-imports cannot see (a call on an allowed module, a builtin) ruff refuses
    in ragcore; the runners may do all of it."""
    tree = copy_tree(tmp_path)
    plant(tree, "ragcore/chat/citations.py", code)
    plant(tree, "ragio/clock.py", code)
    result = ruff(tree)
    assert result.returncode != 0
    refused = [line for line in result.stdout.splitlines() if banned in line]
    assert refused and all("src/ragcore/chat/citations.py" in line for line in refused), (
        result.stdout
    )


@pytest.mark.parametrize("module", ["time", "os", "random", "pathlib"])
def test_importing_the_clock_environment_randomness_or_files_in_the_core_breaks_a_contract(
    tmp_path, module
):
    tree = copy_tree(tmp_path)
    planted = tree / "src" / "ragcore" / "chat" / "citations.py"
    planted.write_text(f"import {module}  # planted\n" + planted.read_text())
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "ragcore is deterministic" in result.stdout and "BROKEN" in result.stdout
    assert f"ragcore.chat.citations -> {module}" in result.stdout


async def test_openapi_describes_every_route(service, api):
    spec = (await api.get("/openapi.json")).json()
    described = {(path, method.upper()) for path, item in spec["paths"].items() for method in item}
    for path, method, route in app_routes(create_app(service)):
        assert declared(route) is not None, f"{method} {path} declares no @operation"
        assert (path, method) in described, f"{method} {path} is missing from /openapi.json"


async def test_openapi_is_served(api):
    response = await api.get("/openapi.json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.1")
    assert "/chat" in response.json()["paths"]


def test_a_runner_importing_an_area_breaks_the_layers_inside_ragio(tmp_path):
    tree = copy_tree(tmp_path)
    planted = tree / "src" / "ragio" / "runner.py"
    planted.write_text("import ragio.knowledge.handlers  # planted\n" + planted.read_text())
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "ragio is layered" in result.stdout and "BROKEN" in result.stdout
    assert "ragio.runner -> ragio.knowledge.handlers" in result.stdout


def test_a_store_running_a_pipeline_breaks_the_contract(tmp_path):
    tree = copy_tree(tmp_path)
    planted = tree / "src" / "ragio" / "knowledge" / "store.py"
    planted.write_text("import ragio.runner  # planted\n" + planted.read_text())
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "the areas' SQL stores run no pipeline" in result.stdout
    assert "ragio.knowledge.store -> ragio.runner" in result.stdout


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("ragcore/knowledge/retrieval.py", "ragcore.chat.pipeline"),  # an area using one above
        ("ragcore/sources.py", "ragcore.knowledge.retrieval"),  # the base using an area
        ("ragcore/language.py", "ragcore.settings"),  # inside the base, up
        ("ragcore/employees/memory.py", "ragcore.api.employees"),  # an area using the API
    ],
)
def test_an_upward_import_in_the_core_breaks_its_layers(tmp_path, module, planted):
    tree = copy_tree(tmp_path)
    path = tree / "src" / module
    path.write_text(f"import {planted}  # planted\n" + path.read_text())
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "ragcore is layered" in result.stdout and "BROKEN" in result.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {planted}" in result.stdout


def test_a_core_module_in_no_layer_breaks_the_layers(tmp_path):
    tree = copy_tree(tmp_path)
    (tree / "src" / "ragcore" / "stray.py").write_text('"""In no layer."""\n')
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "ragcore is layered" in result.stdout and "ragcore.stray" in result.stdout
