-- Where a document is published (a web page), when the owner says: a citation of it
-- links there (the chat widget shows the link). NULL: not said.
ALTER TABLE documents ADD COLUMN source_url text;
