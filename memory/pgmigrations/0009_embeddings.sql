-- 0009 (PostgreSQL): embeddings of messages for hybrid retrieval
-- (memory.embeddings), as SQLite's migration 0005. A vector is kept once
-- per model and text: identical texts share it (the embedding cache). hash
-- is the first 16 bytes of the text's SHA-256; vec is little-endian float32
-- of unit length.
CREATE TABLE embedding_vectors (
    id    BIGSERIAL PRIMARY KEY,
    model TEXT NOT NULL,
    hash  BYTEA NOT NULL,
    vec   BYTEA NOT NULL,
    UNIQUE (model, hash)
);

-- Which message is embedded with which model. seq grows with every row, so
-- a reader loads only the rows added since it last looked. A purged message
-- takes its embeddings with it (ON DELETE CASCADE).
CREATE TABLE message_embeddings (
    seq        BIGSERIAL PRIMARY KEY,
    message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    model      TEXT NOT NULL,
    hash       BYTEA NOT NULL,
    UNIQUE (message_id, model)
);
CREATE INDEX message_embeddings_vector ON message_embeddings(model, hash);

-- An edited text is embedded again.
CREATE FUNCTION recall_embeddings_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_embeddings WHERE message_id = OLD.id;
    RETURN NULL;
END $$;
CREATE TRIGGER message_embeddings_edited AFTER UPDATE OF text ON messages
    FOR EACH ROW WHEN (NEW.text <> OLD.text) EXECUTE FUNCTION recall_embeddings_edited();

-- A vector no message uses any more goes (once per statement: a purge
-- deletes many mappings at once).
CREATE FUNCTION recall_embeddings_unused() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM embedding_vectors v USING (SELECT DISTINCT model, hash FROM old_mappings) g
        WHERE v.model = g.model AND v.hash = g.hash
          AND NOT EXISTS (SELECT 1 FROM message_embeddings e WHERE e.model = g.model AND e.hash = g.hash);
    RETURN NULL;
END $$;
CREATE TRIGGER embedding_vectors_unused AFTER DELETE ON message_embeddings
    REFERENCING OLD TABLE AS old_mappings FOR EACH STATEMENT EXECUTE FUNCTION recall_embeddings_unused();
