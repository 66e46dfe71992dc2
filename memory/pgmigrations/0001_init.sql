-- 0001 (PostgreSQL): the tables of SQLite's migrations 0001 and 0004, with
-- the search index as a postings table (see postgres_search.go). Times are
-- unix milliseconds, as in SQLite, so both stores export the same bytes.
CREATE TABLE owners (
    owner          TEXT PRIMARY KEY,
    memory_enabled BOOLEAN NOT NULL,
    storage        TEXT NOT NULL,
    threshold      INTEGER NOT NULL,
    facts_off      BOOLEAN NOT NULL DEFAULT false,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);

CREATE TABLE conversations (
    id                  BIGSERIAL PRIMARY KEY,
    key                 TEXT NOT NULL UNIQUE,
    owner               TEXT NOT NULL,
    turns_since_summary INTEGER NOT NULL DEFAULT 0,
    last_summary_at     BIGINT NOT NULL DEFAULT 0,
    next_chunk          BIGINT NOT NULL DEFAULT 1,
    created_at          BIGINT NOT NULL,
    search_docs         BIGINT NOT NULL DEFAULT 0, -- messages (BM25's N), kept by the messages triggers
    search_tokens       BIGINT NOT NULL DEFAULT 0  -- their length in tokens (N * avgdl)
);
CREATE INDEX conversations_owner ON conversations(owner);

CREATE TABLE messages (
    id          BIGSERIAL PRIMARY KEY,
    conv        BIGINT NOT NULL REFERENCES conversations(id),
    role        TEXT NOT NULL,
    sender_id   TEXT NOT NULL DEFAULT '',
    sender_name TEXT NOT NULL DEFAULT '',
    platform_id TEXT NOT NULL DEFAULT '',
    reply_to    TEXT NOT NULL DEFAULT '',
    text        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    tokens      INTEGER NOT NULL DEFAULT 0,
    is_active   BOOLEAN NOT NULL DEFAULT true,
    chunk_id    BIGINT NOT NULL DEFAULT 0,
    search_len  INTEGER NOT NULL DEFAULT 0 -- tokens of text and sender name (BM25's D)
);
CREATE UNIQUE INDEX messages_platform ON messages(conv, platform_id) WHERE platform_id <> '';
CREATE INDEX messages_conv_active ON messages(conv, is_active, id);
CREATE INDEX messages_conv_chunk ON messages(conv, chunk_id);
CREATE INDEX messages_created ON messages(created_at);
CREATE INDEX messages_reply ON messages(conv, reply_to) WHERE reply_to <> '';

-- The search index: one row per (conversation, stem, message), computed in
-- Go with the tokenizer and stemmer every backend shares. tf_text counts the
-- stem in the text, tf_sender in the sender's name; doc_len is the message's
-- search_len, so ranking never reads the messages table. A deleted message
-- takes its rows with it (ON DELETE CASCADE): a purge leaves no term behind.
CREATE TABLE message_terms (
    conv      BIGINT NOT NULL,
    term      BYTEA NOT NULL,
    msg       BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    tf_text   INTEGER NOT NULL,
    tf_sender INTEGER NOT NULL,
    doc_len   INTEGER NOT NULL,
    -- The counts ride in the index: a search reads one contiguous range of
    -- it per stem (an index-only scan once vacuumed), not a heap page per
    -- posting.
    PRIMARY KEY (conv, term, msg) INCLUDE (tf_text, tf_sender, doc_len)
);
CREATE INDEX message_terms_msg ON message_terms(msg);

-- How many of a conversation's messages hold each stem (BM25's n), kept with
-- the postings: added to by the insert (postgres.go), taken from by the
-- trigger below when postings go, and a stem no message holds any more is
-- deleted (a purge leaves no trace here either). A search of a big
-- conversation reads a common stem's newest postings only, and its n here.
CREATE TABLE term_stats (
    conv BIGINT NOT NULL,
    term BYTEA NOT NULL,
    df   BIGINT NOT NULL,
    PRIMARY KEY (conv, term)
);
CREATE FUNCTION recall_term_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH gone AS (SELECT conv, term, count(*) AS n FROM old_terms GROUP BY conv, term)
    UPDATE term_stats s SET df = s.df - gone.n FROM gone WHERE s.conv = gone.conv AND s.term = gone.term;
    DELETE FROM term_stats s USING (SELECT DISTINCT conv, term FROM old_terms) g
        WHERE s.conv = g.conv AND s.term = g.term AND s.df <= 0;
    RETURN NULL;
END $$;
CREATE TRIGGER message_terms_stats AFTER DELETE ON message_terms
    REFERENCING OLD TABLE AS old_terms FOR EACH STATEMENT EXECUTE FUNCTION recall_term_stats_delete();

CREATE FUNCTION recall_search_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE conversations SET search_docs = search_docs + 1, search_tokens = search_tokens + NEW.search_len WHERE id = NEW.conv;
        RETURN NEW;
    END IF;
    UPDATE conversations SET search_docs = search_docs - 1, search_tokens = search_tokens - OLD.search_len WHERE id = OLD.conv;
    RETURN OLD;
END $$;
CREATE TRIGGER messages_search_count AFTER INSERT OR DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION recall_search_count();

CREATE TABLE summaries (
    id         BIGSERIAL PRIMARY KEY,
    conv       BIGINT NOT NULL REFERENCES conversations(id),
    level      INTEGER NOT NULL,
    text       TEXT NOT NULL,
    is_active  BOOLEAN NOT NULL DEFAULT true,
    sources    TEXT NOT NULL DEFAULT '[]',
    from_at    BIGINT NOT NULL,
    to_at      BIGINT NOT NULL,
    tokens     INTEGER NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE INDEX summaries_conv ON summaries(conv, is_active, level);

CREATE TABLE memories (
    owner      TEXT NOT NULL,
    key        TEXT NOT NULL,
    content    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (owner, key)
);

CREATE TABLE facts (
    id         BIGSERIAL PRIMARY KEY,
    owner      TEXT NOT NULL,
    conv_key   TEXT NOT NULL DEFAULT '',
    content    TEXT NOT NULL,
    norm       TEXT NOT NULL,
    sources    JSONB NOT NULL DEFAULT '[]',
    tags       JSONB NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX facts_owner ON facts(owner, norm);
