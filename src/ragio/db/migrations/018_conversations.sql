-- Conversations and their turns (ragio.conversations), for GET /conversations: what was
-- asked and answered on /chat and the OpenAI-compatible /v1/chat/completions, with
-- citations, role, channel and timings. Deleted after CONVERSATION_RETENTION_DAYS, with
-- their turns, when a conversation begins.
--
-- participant_hash is a SHA-256 of "<channel>:<who asked>" (/chat's user, the OpenAI
-- request's user); NULL when nobody was named. continuation is how a client that sends
-- the whole history each time (the OpenAI protocol) is found again: the SHA-256 of the
-- conversation's messages as the client will send them back (ragcore.chat.history).
CREATE TABLE conversations (
    id               bigserial PRIMARY KEY,
    channel          text NOT NULL,
    role             text,
    participant_hash text,
    continuation     text,
    started_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    turn_count       integer NOT NULL DEFAULT 0
);
-- newest first (and by channel), and the retention's delete
CREATE INDEX conversations_updated_at ON conversations (updated_at, id);
CREATE INDEX conversations_channel ON conversations (channel, updated_at);
CREATE INDEX conversations_continuation ON conversations (channel, continuation)
    WHERE continuation IS NOT NULL;

-- One question and its answer. search_question is the standalone question searched for
-- a follow-up (NULL when searched as asked); citations [{number, document_id,
-- document_name, live_action_id}]; timings the milliseconds the turn took
-- ({"answer_ms": …}); outcome answered, not_found (the documents do not say), limited
-- (a token budget) or failed.
CREATE TABLE conversation_turns (
    conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn            integer NOT NULL,
    question        text NOT NULL,
    search_question text,
    answer          text NOT NULL,
    outcome         text NOT NULL
                    CHECK (outcome IN ('answered', 'not_found', 'limited', 'failed')),
    citations       jsonb NOT NULL DEFAULT '[]',
    role            text,
    provider        text,
    model           text,
    language        text,
    timings         jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (conversation_id, turn)
);
