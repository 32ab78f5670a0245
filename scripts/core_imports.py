"""The folder-level import graph of ragcore: its edges, its cycles, and the direct imports
that run against the "ragcore is layered" contract in pyproject.toml.

    PYTHONPATH=src .venv/bin/python scripts/core_imports.py [-v]

A unit is a child of ragcore (a folder such as ``ragcore.chat``, or a module such as
``ragcore.settings``). ``-v`` lists the module-level imports behind every edge.
lint-imports enforces the contract; this shows the whole graph, to see where a new
module belongs or what a move would break.
"""

from __future__ import annotations

import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = "ragcore is layered"


def unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def edges(graph: grimp.ImportGraph) -> dict[tuple[str, str], list[tuple[str, str]]]:
    found: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            a, b = unit(module), unit(imported)
            if imported.startswith("ragcore.") and a and b and a != b:
                found[(a, b)].append((module, imported))
    return found


def cycles(pairs: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one unit (Tarjan)."""
    successors: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        successors[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(successors[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted({u for pair in pairs for u in pair}):
        if v not in index:
            visit(v)
    return groups


def layer_ranks() -> dict[str, int]:
    """Each unit's layer (0 on top) in the contract, from pyproject.toml."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [contract] = [
        c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith(CONTRACT)
    ]
    return {
        name.strip(): rank
        for rank, layer in enumerate(contract["layers"])
        for name in layer.split("|")
    }


def main(verbose: bool) -> int:
    found = edges(grimp.build_graph("ragcore"))
    ranks = layer_ranks()
    print(f"{len(found)} folder-level edges")
    for (a, b), imports in sorted(found.items()):
        two_way = "  (two-way)" if (b, a) in found else ""
        print(f"  {a} -> {b}{two_way}")
        if verbose or two_way:
            for module, imported in imports:
                print(f"      {module} -> {imported}")
    groups = cycles(set(found))
    print(f"{len(groups)} cycles" + "".join(f"\n  {' <-> '.join(g)}" for g in groups))
    unplaced = sorted({u for pair in found for u in pair} - set(ranks))
    against = {
        pair: imports
        for pair, imports in found.items()
        if pair[0] in ranks and pair[1] in ranks and ranks[pair[0]] >= ranks[pair[1]]
    }
    print(f"units in no layer: {', '.join(unplaced) or 'none'}")
    print(
        f"against the layers: {len(against)} folder-level edges, "
        f"{sum(map(len, against.values()))} imports"
    )
    for (a, b), imports in sorted(against.items()):
        print(f"  {a} -> {b}: " + ", ".join(f"{m} -> {i}" for m, i in imports))
    return 1 if groups or against or unplaced else 0


if __name__ == "__main__":
    sys.exit(main("-v" in sys.argv))
