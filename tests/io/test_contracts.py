"""The architecture guards bite: the import contract and the OpenAPI description."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ragcore.api.operations import declared
from ragio.http.app import create_app
from ragio.http.spec import app_routes

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


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
