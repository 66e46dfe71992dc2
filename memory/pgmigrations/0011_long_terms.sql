-- 0010 (PostgreSQL): no token longer than 64 bytes is indexed
-- (fts.MaxTermBytes in memory/internal/fts): a 30 MB "word" made an index
-- row PostgreSQL refuses ("index row requires … bytes, maximum size is
-- 8191"). Such a stem is its token (the Porter stemmer passes long tokens
-- through), so the rows to drop are those of stems over the bound. Their
-- messages keep their length (doc_len, search_len): a long token still
-- counts in BM25's D. The statement trigger of 0001 takes them from
-- term_stats.
DELETE FROM message_terms WHERE octet_length(term) > 64;
