-- 0004 (PostgreSQL): the turns shared by the replicas (package turnqueue).
-- An update is inserted when a replica receives it; a worker of any replica
-- claims the oldest row of a conversation that has no earlier unfinished
-- row (FOR UPDATE SKIP LOCKED), under a lease it renews while the turn
-- runs; a lease that expires (the replica died) lets another replica claim
-- the turn again. The unique (conv_key, platform_id) drops a redelivered
-- update, whichever replica it reaches; finished rows stay for a while so
-- late redeliveries are dropped too.
CREATE TABLE turn_queue (
    id          BIGSERIAL PRIMARY KEY,
    channel     TEXT NOT NULL,
    conv_key    TEXT NOT NULL,
    platform_id TEXT,
    inbound     JSONB NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    holder      TEXT,
    lease_until TIMESTAMPTZ,
    attempts    INTEGER NOT NULL DEFAULT 0,
    done_at     TIMESTAMPTZ,
    UNIQUE (conv_key, platform_id)
);
CREATE INDEX turn_queue_open ON turn_queue(id) WHERE done_at IS NULL;
CREATE INDEX turn_queue_open_conv ON turn_queue(conv_key, id) WHERE done_at IS NULL;
CREATE INDEX turn_queue_done ON turn_queue(done_at) WHERE done_at IS NOT NULL;
