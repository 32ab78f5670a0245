-- Human handoff (docs/handoff.md, ragcore.handoff): a conversation's mode, who wrote
-- each message, the owner's notifications and the log of every move.
--
-- mode: ai (the AI answers), human (a person answers; the AI stays silent and records)
-- or closed (the owner closed it: the customer's next message begins a new one).
-- reply_to: where a person's message reaches the customer on their channel (a chat id,
-- a phone address, a Discord channel, a widget visitor), kept only while the
-- conversation is or was handed off. refusals: the AI's grounded refusals in a row.
ALTER TABLE conversations
    ADD COLUMN mode text NOT NULL DEFAULT 'ai' CHECK (mode IN ('ai', 'human', 'closed')),
    ADD COLUMN mode_changed_at timestamptz,
    ADD COLUMN reply_to jsonb,
    ADD COLUMN refusals integer NOT NULL DEFAULT 0,
    ADD COLUMN waiting_since timestamptz,
    ADD COLUMN last_message_at timestamptz;
CREATE INDEX conversations_mode ON conversations (mode, updated_at) WHERE mode <> 'ai';

-- author: who wrote the turn's answer. ai: a question and the AI's answer; customer: a
-- customer's message no AI answered (question only: a person answers); person: a
-- person's message (answer only), ``person`` saying who (console, telegram owner).
ALTER TABLE conversation_turns
    ADD COLUMN author text NOT NULL DEFAULT 'ai' CHECK (author IN ('ai', 'customer', 'person')),
    ADD COLUMN person text;
ALTER TABLE conversation_turns DROP CONSTRAINT conversation_turns_outcome_check;
ALTER TABLE conversation_turns ADD CONSTRAINT conversation_turns_outcome_check
    CHECK (outcome IN ('answered', 'not_found', 'limited', 'failed', 'interrupted',
                       'hung up', 'handed_off', 'to_person', 'sent', 'not_delivered'));

-- Every move of a conversation's mode, and every refused attempt to write into it:
-- event moved (from_mode -> to_mode) or refused; by customer, owner (console, telegram
-- owner), rule (refusals, a role's topic) or timeout; detail says why.
CREATE TABLE handoff_log (
    id              bigserial PRIMARY KEY,
    conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    at              timestamptz NOT NULL,
    event           text NOT NULL CHECK (event IN ('moved', 'refused')),
    from_mode       text NOT NULL,
    to_mode         text NOT NULL,
    by              text NOT NULL,
    detail          text NOT NULL DEFAULT ''
);
CREATE INDEX handoff_log_conversation ON handoff_log (conversation_id, id);

-- The owner's notifications on a chat that can be replied to (Telegram): a reply to
-- message_id in chat is a person's message in conversation_id.
CREATE TABLE handoff_notifications (
    channel         text NOT NULL,
    chat            text NOT NULL,
    message_id      text NOT NULL,
    conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    sent_at         timestamptz NOT NULL,
    PRIMARY KEY (channel, chat, message_id)
);

-- What happened in customers' conversations, in order, for the live views (the console's
-- inbox, the widget): a turn recorded (kind turn, with its number) or the mode moved
-- (kind mode). Read by id by every process (ragio.handoff.feed); kept a day.
CREATE TABLE conversation_events (
    id              bigserial PRIMARY KEY,
    conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    at              timestamptz NOT NULL DEFAULT now(),
    kind            text NOT NULL CHECK (kind IN ('turn', 'mode')),
    turn            integer,
    mode            text
);
CREATE INDEX conversation_events_at ON conversation_events (at);

-- The business's name, opening hours and time zone, for what a customer is told when a
-- person takes over (ragcore.handoff.hours reads opening_hours: "Mon-Fri 09:00-17:00").
ALTER TABLE business_profile
    ADD COLUMN name text NOT NULL DEFAULT '',
    ADD COLUMN opening_hours text NOT NULL DEFAULT '',
    ADD COLUMN timezone text NOT NULL DEFAULT '';
