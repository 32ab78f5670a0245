-- Text channel deliveries already taken (ragio.channels.updates). Telegram and the
-- telephony provider redeliver an update they think was missed, and a restart must
-- not answer it again: a webhook inserts (channel, delivery id) before answering and
-- answers only when the row is new. delivery_id is Telegram's update_id, the
-- provider's MessageSid or the Discord interaction id.
CREATE TABLE channel_updates (
    channel     text NOT NULL,
    delivery_id text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel, delivery_id)
);
CREATE INDEX channel_updates_received_at ON channel_updates (received_at);
