"""The knowledge graph's Neo4j store is an extra: `pip install .` leaves its driver out,
`pip install 'ragchat[graph]'` brings it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


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
