-- Websites as sources of documents (ragcore.websites, ragio.websites): the owner's start
-- URLs and/or sitemaps, the include and exclude patterns, a page limit and a depth. A
-- crawl runs as a job of kind 'crawl' (key: the website's id); crawl_every_minutes queues
-- one when due. website_pages holds every page a crawl reached, with what the next crawl
-- asks conditionally (etag, last_modified), the hash of the body it last read (an
-- unchanged body is not read again) and the links it had (followed again when it answers
-- 304), the document it became (NULL: none, and why in
-- reason) and the outcome of its last fetch.
CREATE TABLE websites (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                text NOT NULL UNIQUE,
    start_urls          text[] NOT NULL DEFAULT '{}',
    sitemaps            text[] NOT NULL DEFAULT '{}',
    include             text[] NOT NULL DEFAULT '{}',
    exclude             text[] NOT NULL DEFAULT '{}',
    max_pages           integer NOT NULL CHECK (max_pages >= 1),
    max_depth           integer NOT NULL CHECK (max_depth >= 0),
    crawl_every_minutes integer CHECK (crawl_every_minutes >= 1),
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    last_crawl_at       timestamptz,   -- when the last crawl ended
    last_crawl          jsonb          -- its result: counts and how it ended
);

CREATE TABLE website_pages (
    website_id    bigint NOT NULL REFERENCES websites (id) ON DELETE CASCADE,
    url           text NOT NULL,
    document_id   bigint REFERENCES documents (id) ON DELETE SET NULL,
    etag          text,
    last_modified text,
    body_hash     text,
    links         text[] NOT NULL DEFAULT '{}',  -- followed from it: a 304 is not read again
    outcome       text NOT NULL,
    reason        text NOT NULL DEFAULT '',
    fetched_at    timestamptz NOT NULL,
    PRIMARY KEY (website_id, url)
);
CREATE INDEX website_pages_document ON website_pages (document_id);
