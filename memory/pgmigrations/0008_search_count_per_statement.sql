-- 0008 (PostgreSQL): a conversation's search totals (search_docs,
-- search_tokens: BM25's N and N * avgdl) are kept by one update per
-- statement, not one per row. A row trigger updated the conversation's row
-- once per message, and PostgreSQL cannot prune the versions of a row its
-- own transaction made: each update walked all the earlier ones, so a
-- transaction of n messages (an import, a copy) cost n². The statement
-- triggers read what the statement inserted or deleted (transition tables)
-- and update each conversation once, in id order (two statements that touch
-- the same conversations lock them in the same order).
DROP TRIGGER messages_search_count ON messages;
DROP FUNCTION recall_search_count();

CREATE FUNCTION recall_search_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d RECORD;
BEGIN
    FOR d IN SELECT conv, count(*) AS n, sum(search_len) AS len FROM new_messages GROUP BY conv ORDER BY conv LOOP
        UPDATE conversations SET search_docs = search_docs + d.n, search_tokens = search_tokens + d.len WHERE id = d.conv;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER messages_search_count_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION recall_search_count_insert();

CREATE FUNCTION recall_search_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d RECORD;
BEGIN
    FOR d IN SELECT conv, count(*) AS n, sum(search_len) AS len FROM old_messages GROUP BY conv ORDER BY conv LOOP
        UPDATE conversations SET search_docs = search_docs - d.n, search_tokens = search_tokens - d.len WHERE id = d.conv;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER messages_search_count_delete AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_messages FOR EACH STATEMENT EXECUTE FUNCTION recall_search_count_delete();
