"""scripts/dev.py's choice of what to install: serve installs the service alone, test adds
the test tools; neither installs again what the venv already has (no install is run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev.py"
spec = importlib.util.spec_from_file_location("ragchat_dev_script", SCRIPT)
assert spec is not None and spec.loader is not None
dev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dev)

HASH, CHANGED = "a" * 64, "b" * 64


def test_serve_installs_the_service_alone_and_test_adds_the_test_tools():
    assert dev.to_install(None, HASH, tests=False) == "."
    assert dev.to_install(None, HASH, tests=True) == ".[test]"


def test_test_after_serve_adds_the_test_tools_and_serve_after_test_installs_nothing():
    served = f"{HASH} ."
    assert dev.to_install(served, HASH, tests=False) is None
    assert dev.to_install(served, HASH, tests=True) == ".[test]"
    tested = f"{HASH} .[test]"
    assert dev.to_install(tested, HASH, tests=True) is None
    assert dev.to_install(tested, HASH, tests=False) is None  # nothing uninstalled


def test_a_changed_pyproject_installs_again_and_an_old_stamp_had_the_test_tools():
    assert dev.to_install(f"{HASH} .[test]", CHANGED, tests=False) == "."
    assert dev.to_install(f"{HASH} .", CHANGED, tests=True) == ".[test]"
    assert dev.to_install(HASH, HASH, tests=True) is None  # written by .[test] before
    assert dev.to_install(HASH, HASH, tests=False) is None


def test_serve_names_the_dictionary_of_every_language_the_service_translates():
    from ragcore.chat.translation import DICTIONARIES

    wanted = {f"dict-freedict-{code}-eng" for code, _ in DICTIONARIES.values()}
    assert set(dev.DICTIONARY_PACKAGES) == wanted
