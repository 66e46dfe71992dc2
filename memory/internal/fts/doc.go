// Package fts owns the search core that every memory backend ranks with:
// text to tokens exactly as SQLite FTS5's 'porter unicode61' tokenizer does,
// free text to query terms and phrases, and FTS5's bm25() score.
//
//   - Tokens follows FTS5's unicode61 tokenizer exactly: token characters are
//     the Unicode 6.1 categories L*, N* and Co (the table in tables.go was
//     generated from SQLite itself, TestGenerateTables), combining
//     diacritics continue a token, letters are case folded and diacritics
//     removed (remove_diacritics=1), and malformed UTF-8 is decoded the way
//     SQLite decodes it; each token then goes through FTS5's Porter stemmer
//     (porter.go). TestTokensMatchSQLite and FuzzTokensMatchSQLite compare
//     it with SQLite's own tokenizer.
//   - Terms picks the search words of free text (at most MaxQueryTerms);
//     Phrases makes each one a phrase of tokens; Match quotes them into an
//     FTS5 MATCH expression that no user text can escape. A document matches
//     when any phrase matches (OR); a phrase of several tokens matches
//     consecutive tokens of one column (PhraseInstances).
//   - No backend indexes a token longer than MaxTermBytes (Indexed): a
//     phrase holding one matches nothing, and a longer query word is no
//     term. Such a token still counts in its row's length and holds its
//     place in the text (Tokens returns it, as FTS5 does).
//   - The score is FTS5's bm25(): k1 = 1.2, b = 0.75,
//     idf = log((N - n + 0.5) / (n + 0.5)) clamped to 1e-6 when <= 0 (IDF),
//     f = the phrase's instances weighted by column, D = the document's
//     length in tokens over all columns, avgdl over all documents
//     (TermScore). Rank scores documents held in memory; the SQLite and
//     PostgreSQL backends gather N, n, f and D from their indexes and sum
//     TermScore in phrase order, so every backend computes the same
//     floating-point score.
//
// The package knows no storage: what a backend indexes (which columns, what
// weights, the statistics of which rows) is the backend's.
package fts
