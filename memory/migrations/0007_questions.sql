-- 0007: the question a command asked and waits for an answer to (/summary's
-- storage and threshold, /purge's choice and confirmation), at most one per
-- conversation, so that an answer after a restart continues it, and one to
-- a question that expired is told so. kind names the command's step, args
-- what was chosen before it (never the user's text). Like handled it lives
-- in SQLite whatever backend an owner chose; rows a day past their expiry
-- are pruned at start.
CREATE TABLE questions (
    conv_key TEXT PRIMARY KEY,          -- "telegram:123:0"
    asked    TEXT NOT NULL,             -- sender id of the member who was asked
    kind     TEXT NOT NULL,
    args     TEXT NOT NULL,
    expires  INTEGER NOT NULL           -- unix ms
) WITHOUT ROWID;
