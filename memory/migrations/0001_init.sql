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
    created_at          INTEGER NOT NULL
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
    chunk_id    INTEGER NOT NULL DEFAULT 0,
    conv_tag    TEXT GENERATED ALWAYS AS ('c' || conv) VIRTUAL -- the conversation as a search term
);
CREATE UNIQUE INDEX messages_platform ON messages(conv, platform_id) WHERE platform_id <> '';
CREATE INDEX messages_conv_active ON messages(conv, is_active, id);
CREATE INDEX messages_conv_chunk ON messages(conv, chunk_id);
CREATE INDEX messages_created ON messages(created_at);
CREATE INDEX messages_reply ON messages(conv, reply_to) WHERE reply_to <> '';

-- External content: the index holds terms, never a second copy of the text.
-- secure-delete removes every trace of a deleted row from the index (a purge
-- must leave nothing behind). conv_tag makes the conversation a term, so a
-- search intersects it with the query instead of scoring every conversation.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    text, sender_name, conv_tag,
    content='messages', content_rowid='id', tokenize='porter unicode61'
);
INSERT INTO messages_fts(messages_fts, rank) VALUES('secure-delete', 1);
INSERT INTO messages_fts(messages_fts, rank) VALUES('rank', 'bm25(1.0, 0.5, 0.0)');

CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, text, sender_name, conv_tag)
    VALUES (new.id, new.text, new.sender_name, new.conv_tag);
END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text, sender_name, conv_tag)
    VALUES ('delete', old.id, old.text, old.sender_name, old.conv_tag);
END;
CREATE TRIGGER messages_au AFTER UPDATE OF text, sender_name ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text, sender_name, conv_tag)
    VALUES ('delete', old.id, old.text, old.sender_name, old.conv_tag);
    INSERT INTO messages_fts(rowid, text, sender_name, conv_tag)
    VALUES (new.id, new.text, new.sender_name, new.conv_tag);
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
