-- 0005: embeddings of messages for hybrid retrieval (memory.embeddings).
-- A vector is kept once per model and text: identical texts share it (the
-- embedding cache). hash is the first 16 bytes of the text's SHA-256; vec
-- is little-endian float32 of unit length. (A rowid table: in a WITHOUT
-- ROWID one, a row of 1 KB already spills into an overflow page of its own.)
CREATE TABLE embedding_vectors (
    id    INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    hash  BLOB NOT NULL,
    vec   BLOB NOT NULL,
    UNIQUE (model, hash)
);

-- Which message is embedded with which model. seq grows with every row, so
-- a reader loads only the rows added since it last looked.
CREATE TABLE message_embeddings (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id INTEGER NOT NULL,
    model      TEXT NOT NULL,
    hash       BLOB NOT NULL,
    UNIQUE (message_id, model)
);
CREATE INDEX message_embeddings_vector ON message_embeddings(model, hash);

-- A purged message takes its embeddings with it, and a vector no message
-- uses any more goes too; an edited text is embedded again.
CREATE TRIGGER message_embeddings_deleted AFTER DELETE ON messages BEGIN
    DELETE FROM message_embeddings WHERE message_id = old.id;
END;
CREATE TRIGGER message_embeddings_edited AFTER UPDATE OF text ON messages WHEN new.text <> old.text BEGIN
    DELETE FROM message_embeddings WHERE message_id = old.id;
END;
CREATE TRIGGER embedding_vectors_unused AFTER DELETE ON message_embeddings
WHEN NOT EXISTS (SELECT 1 FROM message_embeddings WHERE model = old.model AND hash = old.hash) BEGIN
    DELETE FROM embedding_vectors WHERE model = old.model AND hash = old.hash;
END;
