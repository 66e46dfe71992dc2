-- 0006: search_gen, the version of a conversation's search index rows for
-- the searches' postings cache (search_cache.go). Adding a message leaves it
-- as it is (the cache adds the new messages itself); anything else that
-- changes which rows the index holds for a conversation (a purge, an edit,
-- a message moved in or out) gives it a new random value, and so does a new
-- conversation (a reused id never meets an old entry).
ALTER TABLE conversations ADD COLUMN search_gen INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER conversations_search_gen AFTER INSERT ON conversations BEGIN
    UPDATE conversations SET search_gen = random() WHERE id = new.id;
END;
CREATE TRIGGER messages_search_gen_ad AFTER DELETE ON messages BEGIN
    UPDATE conversations SET search_gen = random() WHERE id = old.conv;
END;
CREATE TRIGGER messages_search_gen_au AFTER UPDATE OF id, conv, text, sender_name ON messages BEGIN
    UPDATE conversations SET search_gen = random() WHERE id IN (old.conv, new.conv);
END;
