"""The knowledge graph's Neo4j store is an extra: `pip install .` leaves its driver out,
`pip install 'ragchat[graph]'` brings it.

Without the driver, GRAPH_URI (the Neo4j store chosen) is a one-line start-up error naming
the extra, and the graph in PostgreSQL works as before. The driver's absence is real to the
processes these tests start: an import hook answers every import of ``neo4j`` as an
uninstalled package does (``ModuleNotFoundError: No module named 'neo4j'``), while the
rest of this environment (which has the test extra, so the driver) stays as it is.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.io.processes import clean_environ

ROOT = Path(__file__).resolve().parents[2]

#: ``python -c`` this, then the `ragchat` arguments: the command, with neo4j not installed
WITHOUT_NEO4J = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "neo4j" or name.startswith("neo4j."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""
RAGCHAT_WITHOUT_NEO4J = WITHOUT_NEO4J + "from voiceio.cli import main\nsys.exit(main())\n"

#: the one line a user reads
DRIVER_MISSING = (
    "ragchat: GRAPH_URI: the knowledge graph on Neo4j needs its driver, which is not "
    "installed: pip install 'ragchat[graph]' (or leave GRAPH_URI blank for the graph in "
    "PostgreSQL)\n"
)


def without_neo4j(code: str, *args: str, cwd: Path, **settings: object):
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=clean_environ(**settings),
        capture_output=True,
        text=True,
        timeout=120,
    )


def requirements() -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return (
        [Requirement(r) for r in project["dependencies"]],
        {name: [Requirement(r) for r in listed] for name, listed in extras.items()},
    )


def test_the_base_install_leaves_the_neo4j_driver_to_the_graph_extra():
    base, extras = requirements()
    assert "neo4j" not in {r.name.lower() for r in base}
    [driver] = [r for r in extras["graph"] if r.name.lower() == "neo4j"]
    assert str(driver.specifier) == ">=5.28"
    # the test command installs the test extra, which brings the graph extra: the graph's
    # Neo4j tests run in it
    assert any(r.name == "ragchat" and r.extras == {"graph"} for r in extras["test"])


def test_the_hook_makes_neo4j_absent(tmp_path):
    absent = without_neo4j(WITHOUT_NEO4J + "import neo4j", cwd=tmp_path)
    assert absent.returncode == 1
    assert "ModuleNotFoundError: No module named 'neo4j'" in absent.stderr


UNREACHABLE = "postgresql://ragchat:pw@127.0.0.1:1/ragchat"


@pytest.mark.parametrize(
    ("command", "database_url"),
    [
        # the service, on the embedded database and on DATABASE_URL's
        (("serve",), ""),
        (("serve",), UNREACHABLE),
        # the one command that opens the graph without the service: it must not delete first
        (("documents", "delete", "1"), ""),
    ],
    ids=["serve", "serve on DATABASE_URL", "documents delete"],
)
def test_graph_uri_without_the_driver_is_a_start_up_error_naming_the_extra(
    tmp_path, command, database_url
):
    """Before anything starts: no embedded database under DATA_DIR, no connection to
    DATABASE_URL's (unreachable here: trying it would be another error), no server."""
    result = without_neo4j(
        RAGCHAT_WITHOUT_NEO4J,
        *command,
        cwd=tmp_path,
        data_dir=tmp_path / "data",
        graph_uri="bolt://127.0.0.1:7687",
        database_url=database_url,
    )
    assert result.returncode == 2
    assert result.stderr == DRIVER_MISSING
    assert result.stdout == ""
    assert not (tmp_path / "data").exists()


def test_without_the_driver_the_graph_in_postgresql_works(tmp_path, database_url):
    # (that no module but the Neo4j store's imports the driver is an import contract in
    # pyproject.toml; this is the service running without it)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "suppliers.md").write_text("The Widget X is made by Foo Ltd in Leeds.")
    on = {"database_url": database_url, "graph_enabled": "true"}
    ingest = without_neo4j(RAGCHAT_WITHOUT_NEO4J, "ingest", str(docs), cwd=tmp_path, **on)
    assert ingest.returncode == 0, ingest.stderr
    status = without_neo4j(RAGCHAT_WITHOUT_NEO4J, "graph", "status", cwd=tmp_path, **on)
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip() == "graph (postgres): 3 entities, 3 mentions, 3 relations"
