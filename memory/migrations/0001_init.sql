-- 0001: conversations, messages with FTS5, summaries, settings, memories, facts.
CREATE TABLE owners (
    owner          TEXT PRIMARY KEY,
    memory_enabled INTEGER NOT NULL,
    storage        TEXT NOT NULL,
    threshold      INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);

CREATE TABLE conversations (
    id                  INTEGER PRIMARY KEY,
    key                 TEXT NOT NULL UNIQUE,
    owner               TEXT NOT NULL,
    turns_since_summary INTEGER NOT NULL DEFAULT 0,
    last_summary_at     INTEGER NOT NULL DEFAULT 0,
    next_chunk          INTEGER NOT NULL DEFAULT 1,
    created_at          INTEGER NOT NULL,
    search_docs         INTEGER NOT NULL DEFAULT 0, -- messages (BM25's N), kept by the messages triggers
    search_tokens       INTEGER NOT NULL DEFAULT 0  -- their length in tokens (N * avgdl)
);
CREATE INDEX conversations_owner ON conversations(owner);

CREATE TABLE messages (
    id          INTEGER PRIMARY KEY,
    conv        INTEGER NOT NULL REFERENCES conversations(id),
    role        TEXT NOT NULL,
    sender_id   TEXT NOT NULL DEFAULT '',
    sender_name TEXT NOT NULL DEFAULT '',
    platform_id TEXT NOT NULL DEFAULT '',
    reply_to    TEXT NOT NULL DEFAULT '',
    text        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    tokens      INTEGER NOT NULL DEFAULT 0,
    is_active   INTEGER NOT NULL DEFAULT 1,
    chunk_id    INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX messages_platform ON messages(conv, platform_id) WHERE platform_id <> '';
CREATE INDEX messages_conv_active ON messages(conv, is_active, id);
CREATE INDEX messages_conv_chunk ON messages(conv, chunk_id);
CREATE INDEX messages_created ON messages(created_at);
CREATE INDEX messages_reply ON messages(conv, reply_to) WHERE reply_to <> '';

-- Search (search index format recall-fts-2; see search_index.go). The index
-- is contentless and holds per-conversation terms computed in Go by
-- recall_fts (a deterministic function every connection registers): each
-- term's doclist holds one conversation's messages, so a search never walks
-- another conversation's rows. Its rowid is the message id times 2^24 plus the
-- message's length in tokens. The triggers pass the terms on insert and replay
-- them on delete; secure-delete removes every trace of a deleted row from the
-- index (a purge must leave nothing behind). The conversation's message count
-- and total length (BM25's N and avgdl) are kept with it.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    text, sender, extra,
    content='', columnsize=0, tokenize='ascii'
);
INSERT INTO messages_fts(messages_fts, rank) VALUES('secure-delete', 1);

CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, text, sender, extra) VALUES (
        recall_fts(new.conv, new.id, new.text, new.sender_name, 0),
        recall_fts(new.conv, new.id, new.text, new.sender_name, 1),
        recall_fts(new.conv, new.id, new.text, new.sender_name, 2),
        recall_fts(new.conv, new.id, new.text, new.sender_name, 3));
    UPDATE conversations SET search_docs = search_docs + 1,
        search_tokens = search_tokens + recall_fts(new.conv, new.id, new.text, new.sender_name, 4)
        WHERE id = new.conv;
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text, sender, extra) VALUES ('delete',
        recall_fts(old.conv, old.id, old.text, old.sender_name, 0),
        recall_fts(old.conv, old.id, old.text, old.sender_name, 1),
        recall_fts(old.conv, old.id, old.text, old.sender_name, 2),
        recall_fts(old.conv, old.id, old.text, old.sender_name, 3));
    UPDATE conversations SET search_docs = search_docs - 1,
        search_tokens = search_tokens - recall_fts(old.conv, old.id, old.text, old.sender_name, 4)
        WHERE id = old.conv;
END;
CREATE TRIGGER messages_au AFTER UPDATE OF id, conv, text, sender_name ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text, sender, extra) VALUES ('delete',
        recall_fts(old.conv, old.id, old.text, old.sender_name, 0),
        recall_fts(old.conv, old.id, old.text, old.sender_name, 1),
        recall_fts(old.conv, old.id, old.text, old.sender_name, 2),
        recall_fts(old.conv, old.id, old.text, old.sender_name, 3));
    UPDATE conversations SET search_docs = search_docs - 1,
        search_tokens = search_tokens - recall_fts(old.conv, old.id, old.text, old.sender_name, 4)
        WHERE id = old.conv;
    INSERT INTO messages_fts(rowid, text, sender, extra) VALUES (
        recall_fts(new.conv, new.id, new.text, new.sender_name, 0),
        recall_fts(new.conv, new.id, new.text, new.sender_name, 1),
        recall_fts(new.conv, new.id, new.text, new.sender_name, 2),
        recall_fts(new.conv, new.id, new.text, new.sender_name, 3));
    UPDATE conversations SET search_docs = search_docs + 1,
        search_tokens = search_tokens + recall_fts(new.conv, new.id, new.text, new.sender_name, 4)
        WHERE id = new.conv;
END;

CREATE TABLE summaries (
    id         INTEGER PRIMARY KEY,
    conv       INTEGER NOT NULL REFERENCES conversations(id),
    level      INTEGER NOT NULL,
    text       TEXT NOT NULL,
    is_active  INTEGER NOT NULL DEFAULT 1,
    sources    TEXT NOT NULL DEFAULT '[]',
    from_at    INTEGER NOT NULL,
    to_at      INTEGER NOT NULL,
    tokens     INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE INDEX summaries_conv ON summaries(conv, is_active, level);

CREATE TABLE memories (
    owner      TEXT NOT NULL,
    key        TEXT NOT NULL,
    content    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (owner, key)
);

CREATE TABLE facts (
    id         INTEGER PRIMARY KEY,
    owner      TEXT NOT NULL,
    conv_key   TEXT NOT NULL DEFAULT '',
    content    TEXT NOT NULL,
    norm       TEXT NOT NULL,
    sources    TEXT NOT NULL DEFAULT '[]',
    tags       TEXT NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX facts_owner ON facts(owner, norm);

CREATE VIRTUAL TABLE facts_fts USING fts5(
    content,
    content='facts', content_rowid='id', tokenize='porter unicode61'
);
INSERT INTO facts_fts(facts_fts, rank) VALUES('secure-delete', 1);

CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER facts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER facts_au AFTER UPDATE OF content ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO facts_fts(rowid, content) VALUES (new.id, new.content);
END;
