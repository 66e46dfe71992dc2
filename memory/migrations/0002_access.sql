-- 0002: access and cost control. Admins' allow/deny decisions, pairing
-- requests of unknown users, and LLM tokens per user per UTC day. These are
-- about the bot's users, not any owner's history: they live in SQLite
-- whatever backend an owner chose, and /purge and export leave them alone.
CREATE TABLE access (
    user_id    TEXT PRIMARY KEY,         -- "telegram:123456"
    allowed    INTEGER NOT NULL,         -- 1 allowed, 0 denied
    decided_by TEXT NOT NULL DEFAULT '', -- the admin
    updated_at INTEGER NOT NULL          -- unix ms
);

CREATE TABLE pairing (
    user_id    TEXT PRIMARY KEY,
    code       TEXT NOT NULL,
    name       TEXT NOT NULL DEFAULT '',
    chat_key   TEXT NOT NULL DEFAULT '', -- the conversation the request came from
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE TABLE usage (
    user_id TEXT NOT NULL,
    day     TEXT NOT NULL,               -- UTC date, "2006-01-02"
    tokens  INTEGER NOT NULL DEFAULT 0,  -- prompt + completion
    PRIMARY KEY (user_id, day)
) WITHOUT ROWID;
CREATE INDEX usage_day ON usage(day);
