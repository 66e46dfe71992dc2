-- 0002 (PostgreSQL): the tables of SQLite's migrations 0002 and 0003 —
-- access decisions, pairing requests, tokens per user per UTC day, and
-- handled platform message ids — so every process on the database shares
-- them: one daily quota, one decision, and a message handled by one process
-- is handled for all (the primary key, not memory, says who was first).
CREATE TABLE access (
    user_id    TEXT PRIMARY KEY,
    allowed    BOOLEAN NOT NULL,
    decided_by TEXT NOT NULL DEFAULT '',
    updated_at BIGINT NOT NULL
);

CREATE TABLE pairing (
    user_id    TEXT PRIMARY KEY,
    code       TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    chat_key   TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE usage (
    user_id TEXT NOT NULL,
    day     TEXT NOT NULL,
    tokens  BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, day)
);
CREATE INDEX usage_day ON usage(day);

CREATE TABLE handled (
    conv_key    TEXT NOT NULL,
    platform_id TEXT NOT NULL,
    at          BIGINT NOT NULL,
    PRIMARY KEY (conv_key, platform_id)
);
CREATE INDEX handled_at ON handled(at);
