-- 0006 (PostgreSQL): the delivery journal shared by the replicas
-- (chat.SharedOutbox): one row per reply being delivered, deleted once the
-- platform answered (no text of a delivered reply stays). text is NULL
-- while only the message showing a streamed reply is known; state is open
-- (recorded, not handed over), sending (being handed over) or failed (the
-- platform did not take it yet: any replica sends it again).
CREATE TABLE outbox (
    conv_key TEXT NOT NULL,
    reply_to TEXT NOT NULL,
    channel  TEXT NOT NULL,
    text     TEXT,
    shown    TEXT NOT NULL DEFAULT '',
    state    TEXT NOT NULL,
    at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (conv_key, reply_to)
);
CREATE INDEX outbox_failed ON outbox(channel, at) WHERE state = 'failed';
