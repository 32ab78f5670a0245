"""The knowledge graph's data and rules: what a graph store keeps, what it answers, and how
the chunks it reaches are ranked for retrieval's third list.

A store (``ragio.graph``: PostgreSQL tables in the service's database, or Neo4j) keeps,
for every chunk, the entities it mentions and the relations between them. Entities are
identified by their resolved ``key`` (``ragcore.knowledge.entities``); a relation is
recorded once per chunk that states it, so its weight is the number of chunks that do,
and deleting a document removes exactly what its chunks contributed.

At question time the store *reaches* from the question's entities (``reach``'s rule
below is the contract both stores keep), and ``rank_graph_chunks`` turns what it reached
into a ranked list of chunks, fused with the dense and full-text lists by reciprocal rank
fusion (``ragcore.knowledge.retrieval``).
"""

from __future__ import annotations

import hashlib

import attrs

from ragcore.effects import Effect

#: the kind of a relation found by the offline rules: two entities named in one chunk
CO_OCCURS = "co_occurs"
#: A reached entity's chunks count for less the further it is from the question: a
#: neighbour's chunk is worth half a seed's. Not tuned further: weighing a neighbour by
#: its link as well (times 1 + ln(1 + link)) gave the multi-hop set the same gain as
#: without, +0.012 nDCG@10 at weight 0.25 (scripts/eval_retrieval.py --graph
#: --multihop-only, one run each).
HOP_DECAY = 0.5
#: how many neighbours each reached entity contributes, strongest relations first
MAX_NEIGHBOURS = 20
#: An entity mentioned by more chunks than this says little about any of them (like a
#: stop word): it is reached, but its chunks are not listed nor its relations followed
#: (a hub's neighbours are everything).
MAX_MENTIONS = 200
#: the strongest neighbours an entity's detail shows (GET /graph/entities/{id})
NEIGHBOURS_SHOWN = 50


def entity_id(key: str) -> str:
    """The stable, URL-safe id of the entity with resolved ``key``: the same in every
    store and after every rebuild (``GET /graph/entities/{id}``)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


@attrs.frozen
class Entity:
    """An entity as a chunk names it: ``key`` is its resolved name (case, spacing,
    plurals and aliases folded; ``ragcore.knowledge.entities``), ``name`` how it is
    best shown, ``kind`` what the rule that found it saw (``name``, ``acronym``,
    ``code``, ``number``, ``term``, ``domain``, or a model's type)."""

    key: str
    name: str
    kind: str

    @property
    def id(self) -> str:
        return entity_id(self.key)


@attrs.frozen
class Relation:
    """A relation a chunk states between two entities (by key). Undirected for reaching;
    ``kind`` is ``CO_OCCURS`` for the offline rules, or a model's type (``acquired``)."""

    source: str
    target: str
    kind: str = CO_OCCURS


@attrs.frozen
class ChunkGraph:
    """What one stored chunk contributes to the graph."""

    chunk_id: int
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...] = ()


@attrs.frozen
class DocumentGraph:
    """What one stored document contributes: recording it replaces whatever that
    document contributed before."""

    document_id: int
    chunks: tuple[ChunkGraph, ...]


@attrs.frozen
class ReachedEntity:
    """An entity ``reach`` arrived at.

    ``hop``: 0 for the question's own entities, 1 for their neighbours, 2 for theirs;
    ``link``: the weight of the strongest relation that reached it (0 for a seed);
    ``mentions``: how many chunks mention it; ``chunk_ids``: those chunks, ascending,
    or () when there are more than ``max_mentions``.
    """

    key: str
    hop: int
    mentions: int
    link: int = 0
    chunk_ids: tuple[int, ...] = ()


@attrs.frozen
class Neighbourhood:
    """What ``reach`` returns: the entities reached, ordered by (hop, key)."""

    entities: tuple[ReachedEntity, ...] = ()


@attrs.frozen
class EntitySummary:
    """An entity as ``GET /graph/entities`` lists it: ``mentions`` chunks in
    ``documents`` documents mention it."""

    id: str
    key: str
    name: str
    kind: str
    mentions: int
    documents: int


@attrs.frozen
class Mention:
    """A chunk that mentions an entity."""

    chunk_id: int
    document_id: int


@attrs.frozen
class Neighbour:
    """An entity related to another: ``weight`` chunks state a relation between them,
    of these ``kinds`` (sorted)."""

    entity: EntitySummary
    weight: int
    kinds: tuple[str, ...]


@attrs.frozen
class EntityDetail:
    """One entity with the chunks that mention it (at most the ``limit`` asked, lowest
    chunk id first) and its neighbours (strongest first, then by key)."""

    entity: EntitySummary
    mentions: tuple[Mention, ...]
    neighbours: tuple[Neighbour, ...]


@attrs.frozen
class GraphCounts:
    entities: int
    mentions: int
    relations: int


# --- the rule ``reach`` keeps, in every store ------------------------------------------------
#
# reach(keys, hops, max_neighbours, max_mentions):
# - the seeds are the stored entities whose key is one of ``keys``: hop 0, link 0;
# - from every entity reached at hop h < hops and mentioned by at most ``max_mentions``
#   chunks, its neighbours (relations of any kind, either direction; a neighbour's weight is
#   the number of distinct chunks recording a relation between the two) are taken strongest
#   first, ties by key, at most ``max_neighbours`` (one already reached takes a place too);
#   one not reached yet is reached at hop h + 1 with link = the largest weight among the
#   relations that reached it at that hop;
# - every reached entity comes with its number of distinct mentioning chunks, and their
#   ids (ascending) when that number is at most ``max_mentions``.
# An entity whose chunks are all gone (its documents deleted) is not stored.


def rank_graph_chunks(reached: Neighbourhood, depth: int, decay: float = HOP_DECAY) -> list[int]:
    """The graph's ranked list: chunk ids, best first, at most ``depth``.

    A chunk scores, for each reached entity it mentions, ``decay ** hop / mentions``: a
    rare entity says more about the chunks naming it than a common one, and the
    question's own entities more than their neighbours. Ties: lower chunk id first.
    """
    scores: dict[int, float] = {}
    for entity in reached.entities:
        if not entity.chunk_ids or entity.mentions <= 0:
            continue
        weight = decay**entity.hop / entity.mentions
        for chunk_id in entity.chunk_ids:
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [chunk_id for chunk_id, _ in ranked[: max(depth, 0)]]


# --- effects ----------------------------------------------------------------------------------


@attrs.frozen
class TeachGraph(Effect[None]):
    """Record the documents ``stored`` in the knowledge graph and forget those ``gone``
    (deleted, or replaced by a new version), at once: a document is in the graph when
    its request returns. Never fails the store: what the graph could not record is caught
    up once it answers again. Result: None (nothing happens when the graph is off)."""

    stored: tuple[int, ...]
    gone: tuple[int, ...] = ()


@attrs.frozen
class ReachGraph(Effect[Neighbourhood]):
    """Reach from the entities named by ``keys`` (a question's candidate keys,
    ``ragcore.knowledge.entities.question_keys``) up to ``hops`` hops. Result: the
    ``Neighbourhood``; empty when the graph is off or unavailable (a question is never
    failed by the graph)."""

    runs_ahead = True

    keys: tuple[str, ...]
    hops: int
    max_neighbours: int = MAX_NEIGHBOURS
    max_mentions: int = MAX_MENTIONS
