-- What each document was added as: the media type of the file it was read from
-- and that file's size in bytes. Documents stored before were sent as text.
ALTER TABLE documents
    ADD COLUMN content_type text NOT NULL DEFAULT 'text/plain',
    ADD COLUMN size_bytes   bigint NOT NULL DEFAULT 0 CHECK (size_bytes >= 0);

UPDATE documents SET
    size_bytes = octet_length(text),
    content_type = CASE WHEN name ~* '\.(md|markdown)$' THEN 'text/markdown' ELSE 'text/plain' END;

ALTER TABLE documents
    ALTER COLUMN content_type DROP DEFAULT,
    ALTER COLUMN size_bytes DROP DEFAULT;
