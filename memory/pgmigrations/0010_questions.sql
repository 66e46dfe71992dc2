-- 0010 (PostgreSQL): the question a command asked and waits for an answer
-- to, at most one per conversation, as SQLite's migration 0007.
CREATE TABLE questions (
    conv_key TEXT PRIMARY KEY,
    asked    TEXT NOT NULL,
    kind     TEXT NOT NULL,
    args     TEXT NOT NULL,
    expires  BIGINT NOT NULL
);
