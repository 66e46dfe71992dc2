-- 0007: no token longer than 64 bytes is indexed (fts.MaxTermBytes in
-- memory/internal/fts): recall_fts now writes such a token's stem empty
-- (memory/search_index.go), so messages_fts is derived again from every
-- message. It is contentless: an old row cannot be deleted with terms
-- recall_fts no longer computes, so the whole index is cleared first. The
-- messages' lengths do not change (a long token still counts), nor do the
-- conversations' search totals.
INSERT INTO messages_fts(messages_fts) VALUES ('delete-all');
INSERT INTO messages_fts(rowid, text, sender, extra)
    SELECT recall_fts(conv, id, text, sender_name, 0), recall_fts(conv, id, text, sender_name, 1),
        recall_fts(conv, id, text, sender_name, 2), recall_fts(conv, id, text, sender_name, 3)
    FROM messages;
UPDATE conversations SET search_gen = random();
