-- A name holds one current version of a document: a new upload of a name replaces the
-- documents holding it (ragcore.knowledge.documents.replacing), found by this index.
CREATE INDEX documents_by_name ON documents (name);
