-- The knowledge graph in the service's own database (ragio.graph.postgres): the entities
-- the documents name, which chunks mention them, and the relations each chunk states.
-- Mentions and relations belong to chunks: deleting a document (or replacing it) takes
-- them with it through the foreign keys; entities left with no mention are pruned by
-- the store. key is the resolved name (ragcore.knowledge.entities); public_id its stable
-- id for GET /graph/entities/{id} (ragcore.knowledge.graph.entity_id).
CREATE TABLE graph_entities (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key       text NOT NULL UNIQUE,
    public_id text NOT NULL UNIQUE,
    name      text NOT NULL,
    kind      text NOT NULL
);

CREATE TABLE graph_mentions (
    entity_id bigint NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
    chunk_id  bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    PRIMARY KEY (entity_id, chunk_id)
);
CREATE INDEX graph_mentions_chunk ON graph_mentions (chunk_id);

-- One row per chunk stating a relation: a relation's weight is how many chunks state it.
CREATE TABLE graph_relations (
    source_id bigint NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
    target_id bigint NOT NULL REFERENCES graph_entities (id) ON DELETE CASCADE,
    kind      text NOT NULL,
    chunk_id  bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    PRIMARY KEY (source_id, target_id, kind, chunk_id)
);
CREATE INDEX graph_relations_target ON graph_relations (target_id, source_id);
CREATE INDEX graph_relations_chunk ON graph_relations (chunk_id);

-- Which documents the graph holds, and in which store (postgres or neo4j): the graph is
-- brought level with the documents by comparing the two (ragio.graph.service). No
-- foreign key: a deleted document stays listed until the store has forgotten it.
CREATE TABLE graph_documents (
    document_id bigint PRIMARY KEY,
    store       text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
