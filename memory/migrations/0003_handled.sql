-- 0003: platform messages the bot handled without storing a reply to them:
-- commands, answers to a question (/summary's, /purge's), and turns that
-- ended with a notice (the model failed and the user was told, the
-- conversation's queue was full). A redelivery of one is not run again, and
-- after a restart it is not taken for a message left unanswered. Ids only,
-- never text; like access and usage it lives in SQLite whatever backend an
-- owner chose. Rows older than handledKeep are pruned at start.
CREATE TABLE handled (
    conv_key    TEXT NOT NULL,            -- "telegram:123:0"
    platform_id TEXT NOT NULL,
    at          INTEGER NOT NULL,         -- unix ms
    PRIMARY KEY (conv_key, platform_id)
) WITHOUT ROWID;
CREATE INDEX handled_at ON handled(at);
