package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/pipeline"
)

// Search implements Backend, with the ranking of the SQLite and JSON
// backends: BM25 (k1 = 1.2, b = 0.75, text weighted 1.0 and the sender's
// name 0.5, FTS5's unicode61 tokenizer and Porter stemmer ported to Go,
// every query term a phrase) with the statistics of the conversation
// searched, ties to the most recent message.
//
// Why not tsvector: PostgreSQL's parser, stemmer, stopwords and ts_rank are
// not FTS5's, so the same archive would rank differently on the two stores
// and the retrieval benchmarks would no longer compare. Instead the index is
// the Go derivation every backend shares, stored as postings: message_terms
// holds one row per (conversation, stem, message) with the stem's count in
// the text and in the sender's name and the message's length (BM25's D);
// the conversation's row keeps N and the total length (triggers of
// migration 0001). A search reads the postings of the query's stems in the
// conversation (one index range per stem), scores in Go exactly as
// bm25Rank does, and reads only the messages returned. A phrase of several
// tokens is checked on the text of the messages that hold all its stems.
func (p *Postgres) Search(ctx context.Context, key pipeline.Key, q Query) ([]Hit, error) {
	phrases := queryPhrases(q.Text)
	if len(phrases) == 0 {
		return nil, ctx.Err()
	}
	var conv, nDocs, nTokens int64
	err := p.pool.QueryRow(ctx, `SELECT id, search_docs, search_tokens FROM conversations WHERE key = $1`, key.String()).Scan(&conv, &nDocs, &nTokens)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", key, err)
	}
	if nDocs <= 0 {
		return nil, nil
	}
	stems := map[string]bool{}
	var terms [][]byte
	for _, ph := range phrases {
		for _, t := range ph {
			if !stems[t] {
				stems[t] = true
				terms = append(terms, []byte(t))
			}
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	type posting struct{ text, sender int32 }
	post := make(map[string]map[int64]posting, len(terms))
	docLen := map[int64]int32{}
	rows, err := p.pool.Query(ctx, `SELECT term, msg, tf_text, tf_sender, doc_len FROM message_terms WHERE conv = $1 AND term = ANY($2)`, conv, terms)
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", key, err)
	}
	for rows.Next() {
		var term []byte
		var msg int64
		var ps posting
		var dl int32
		if err := rows.Scan(&term, &msg, &ps.text, &ps.sender, &dl); err != nil {
			rows.Close()
			return nil, fmt.Errorf("searching %s: %w", key, err)
		}
		m := post[string(term)]
		if m == nil {
			m = map[int64]posting{}
			post[string(term)] = m
		}
		m[msg] = ps
		docLen[msg] = dl
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching %s: %w", key, err)
	}

	// freq[msg][phrase]: the phrase's weighted instances in the message.
	freq := map[int64][]float64{}
	at := func(msg int64) []float64 {
		f := freq[msg]
		if f == nil {
			f = make([]float64, len(phrases))
			freq[msg] = f
		}
		return f
	}
	var multi []int
	for pi, ph := range phrases {
		switch len(ph) {
		case 0:
		case 1:
			for msg, ps := range post[ph[0]] {
				at(msg)[pi] += float64(ps.text)*messageWeights[0] + float64(ps.sender)*messageWeights[1]
			}
		default:
			multi = append(multi, pi)
		}
	}
	if len(multi) > 0 {
		// Messages holding every stem of a phrase may hold the phrase: read
		// their text and count it as bm25Rank does.
		cand := map[int64]bool{}
		for _, pi := range multi {
			for msg := range post[phrases[pi][0]] {
				all := true
				for _, t := range phrases[pi][1:] {
					if _, ok := post[t][msg]; !ok {
						all = false
						break
					}
				}
				if all {
					cand[msg] = true
				}
			}
		}
		if len(cand) > 0 {
			ids := make([]int64, 0, len(cand))
			for id := range cand {
				ids = append(ids, id)
			}
			rows, err := p.pool.Query(ctx, `SELECT id, text, sender_name FROM messages WHERE conv = $1 AND id = ANY($2)`, conv, ids)
			if err != nil {
				return nil, fmt.Errorf("searching %s: %w", key, err)
			}
			for rows.Next() {
				var id int64
				var text, sender string
				if err := rows.Scan(&id, &text, &sender); err != nil {
					rows.Close()
					return nil, fmt.Errorf("searching %s: %w", key, err)
				}
				cols := [][]string{ftsTokens(text), ftsTokens(sender)}
				for _, pi := range multi {
					for ci, col := range cols {
						if n := phraseInstances(col, phrases[pi]); n > 0 {
							at(id)[pi] += messageWeights[ci] * float64(n)
						}
					}
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("searching %s: %w", key, err)
			}
		}
	}

	hits := make([]float64, len(phrases))
	for msg, f := range freq {
		any := false
		for i, v := range f {
			if v > 0 {
				hits[i]++
				any = true
			}
		}
		if !any {
			delete(freq, msg)
		}
	}
	if len(freq) == 0 {
		return nil, nil
	}
	var active map[int64]bool
	if q.ArchivedOnly {
		// The active messages are the recent window: few.
		active = map[int64]bool{}
		rows, err := p.pool.Query(ctx, `SELECT id FROM messages WHERE conv = $1 AND is_active`, conv)
		if err != nil {
			return nil, fmt.Errorf("searching %s: %w", key, err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			active[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("searching %s: %w", key, err)
		}
	}
	nRow := float64(nDocs)
	avgdl := float64(nTokens) / nRow
	idf := make([]float64, len(phrases))
	for i, n := range hits {
		idf[i] = bm25IDF(nRow, n)
	}
	type scored struct {
		id    int64
		score float64
	}
	ranked := make([]scored, 0, len(freq))
	for msg, f := range freq {
		if active[msg] {
			continue
		}
		D := float64(docLen[msg])
		score := 0.0
		for i, v := range f {
			score += bm25Term(idf[i], v, D, avgdl)
		}
		ranked = append(ranked, scored{msg, score})
	}
	sort.Slice(ranked, func(i, j int) bool {
		if ranked[i].score != ranked[j].score {
			return ranked[i].score > ranked[j].score
		}
		return ranked[i].id > ranked[j].id
	})
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	if n := limit + len(q.Exclude); len(ranked) > n {
		ranked = ranked[:n]
	}
	ids := make([]int64, len(ranked))
	for i, r := range ranked {
		ids[i] = r.id
	}
	rows, err = p.pool.Query(ctx, `SELECT `+pgMsgColumns+` FROM messages m WHERE m.conv = $1 AND m.id = ANY($2)`, conv, ids)
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", key, err)
	}
	msgs, err := pgScanMessages(rows, key)
	if err != nil {
		return nil, fmt.Errorf("searching %s: %w", key, err)
	}
	byID := make(map[int64]Message, len(msgs))
	for _, m := range msgs {
		byID[m.ID] = m
	}
	out := make([]Hit, 0, len(ranked))
	for _, r := range ranked {
		if m, ok := byID[r.id]; ok { // deleted meanwhile: left out
			out = append(out, Hit{Message: m, Score: r.score})
		}
	}
	return BudgetHits(out, q), nil
}
