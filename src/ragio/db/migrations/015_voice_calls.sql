-- Phone calls on the voice channel and what was asked on them (ragio.voice.calls), for
-- GET /voice/calls. Kept 90 days: older calls are deleted, with their turns, when a
-- call begins.
--
-- call_sid is the telephony provider's call id; a media stream that reconnects during
-- the call keeps the row and brings a new stream_sid. caller_hash is a SHA-256 of
-- "voice:<the caller's number>" (ragcore.employees.learning.asker_hash): the same caller
-- gives the same hash, and the number itself is not kept.
CREATE TABLE voice_calls (
    id          bigserial PRIMARY KEY,
    call_sid    text NOT NULL UNIQUE,
    stream_sid  text,
    caller_hash text NOT NULL,
    role        text,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    end_reason  text
);
-- newest first, and the retention's delete
CREATE INDEX voice_calls_started_at ON voice_calls (started_at, id);

-- One question and what came of it (ragcore.voice.call.TurnRecord). citations are
-- [{number, document_id, document_name}] of the answer; stages the milliseconds each
-- stage took ({"transcript_ms": …, "voice_to_voice_ms": …}); role, provider, model and
-- language are the answer's, NULL when no answer came.
CREATE TABLE voice_turns (
    call_id    bigint NOT NULL REFERENCES voice_calls (id) ON DELETE CASCADE,
    turn       integer NOT NULL,
    question   text,
    answer     text,
    outcome    text NOT NULL
               CHECK (outcome IN ('answered', 'interrupted', 'failed', 'hung up')),
    citations  jsonb NOT NULL DEFAULT '[]',
    role       text,
    provider   text,
    model      text,
    language   text,
    stages     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    PRIMARY KEY (call_id, turn)
);
