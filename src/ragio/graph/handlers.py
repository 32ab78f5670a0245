"""Handler of the knowledge graph's effect (``ragcore.knowledge.graph``)."""

from __future__ import annotations

from ragcore.knowledge.graph import Neighbourhood, ReachGraph
from ragio.service import HandlerTable, Service


async def reach_graph(effect: ReachGraph, service: Service) -> Neighbourhood:
    return await service.graph.reach(effect)


HANDLERS: HandlerTable = {ReachGraph: reach_graph}
