-- The usage ledger: one row per LLM call. A row starts 'reserved' (holding an
-- upper bound before the call, so budgets hold under concurrency) and becomes
-- 'settled' with the tokens the call used.
CREATE TABLE usage_records (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                timestamptz NOT NULL,
    role              text,
    state             text NOT NULL CHECK (state IN ('reserved', 'settled')),
    reserved_tokens   integer NOT NULL,
    provider          text,
    model             text,
    prompt_tokens     integer,
    completion_tokens integer,
    estimated         boolean NOT NULL DEFAULT false
);

CREATE INDEX usage_records_at ON usage_records (at);
