-- 0005 (PostgreSQL): the rate limit's sliding windows, shared by the
-- replicas (limits.Rate with memory.Postgres as its windows): per user the
-- times of the messages accepted in the last window, oldest first, and
-- whether the user was told of a refusal since the last accepted one.
CREATE TABLE rate_windows (
    user_id TEXT PRIMARY KEY,
    times   TIMESTAMPTZ[] NOT NULL,
    told    BOOLEAN NOT NULL DEFAULT false
);
