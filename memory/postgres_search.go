package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// pgSearchTuning bounds the postings one search reads (see Postgres.Search).
type pgSearchTuning struct {
	// exactUpTo: conversations with at most this many messages are ranked
	// exactly: every posting of every query stem is read.
	exactUpTo int64
	// budget: in a bigger conversation, at most this many postings are read
	// in all, the rarest stems first; a stem is read whole when it fits
	// what is left, else only its newest postings, at least minPer.
	budget, minPer int64
}

var defaultPGSearchTuning = pgSearchTuning{exactUpTo: 5000, budget: 4000, minPer: 300}

func (p *Postgres) tuning() pgSearchTuning {
	if p.tune != nil {
		return *p.tune
	}
	return defaultPGSearchTuning
}

// pruneLimits reads the stems' n (term_stats) and decides how many of each
// stem's newest postings the search reads: the rarest first, each whole
// while the budget allows, the rest their newest share of what is left (at
// least minPer each). A stem no message holds gets 0.
func (p *Postgres) pruneLimits(ctx context.Context, conv int64, terms [][]byte) (map[string]int64, []int32, error) {
	df := make(map[string]int64, len(terms))
	rows, err := p.pool.Query(ctx, `SELECT term, df FROM term_stats WHERE conv = $1 AND term = ANY($2)`, conv, terms)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var term []byte
		var n int64
		if err := rows.Scan(&term, &n); err != nil {
			rows.Close()
			return nil, nil, err
		}
		df[string(term)] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	tune := p.tuning()
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return df[string(terms[order[a]])] < df[string(terms[order[b]])] })
	limits := make([]int32, len(terms))
	left := tune.budget
	for k, i := range order {
		n := df[string(terms[i])]
		share := left / int64(len(order)-k) // what is left, shared by the stems still to read
		lim := min(n, max(share, tune.minPer))
		if n <= left {
			lim = n // fits whole
		}
		limits[i] = int32(lim)
		left = max(0, left-lim)
	}
	return df, limits, nil
}

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
// fts.Rank does, and reads only the messages returned. A phrase of several
// tokens is checked on the text of the messages that hold all its stems.
//
// Pruning, the one approximation, bounds the postings read. A conversation
// of up to exactUpTo (5,000) messages is ranked exactly: the same results
// and scores as the JSON backend (and as SQLite, which is exact there too).
// In a bigger one at most budget (4,000) postings are read: the query's
// stems rarest first, each whole while it fits, the common ones only their
// newest postings; n of a stem is always exact (term_stats), so a common
// stem weighs what it should where it is counted, and is not counted in the
// older messages beyond its share. A phrase of several tokens is checked
// on the messages read.
func (p *Postgres) Search(ctx context.Context, key pipeline.Key, q Query) ([]Hit, error) {
	phrases := fts.Phrases(q.Text)
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
	// df: the stems' n from term_stats when the conversation is big enough
	// to prune; nil when every posting is read (n is then counted).
	var df map[string]int64
	var rows pgx.Rows
	if nDocs <= p.tuning().exactUpTo {
		rows, err = p.pool.Query(ctx, `SELECT term, msg, tf_text, tf_sender, doc_len FROM message_terms WHERE conv = $1 AND term = ANY($2)`, conv, terms)
	} else {
		var limits []int32
		df, limits, err = p.pruneLimits(ctx, conv, terms)
		if err != nil {
			return nil, fmt.Errorf("searching %s: %w", key, err)
		}
		rows, err = p.pool.Query(ctx, `SELECT t.term, p.msg, p.tf_text, p.tf_sender, p.doc_len
			FROM unnest($2::bytea[], $3::int[]) t(term, lim),
			LATERAL (SELECT msg, tf_text, tf_sender, doc_len FROM message_terms
				WHERE conv = $1 AND term = t.term ORDER BY msg DESC LIMIT t.lim) p`, conv, terms, limits)
	}
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
		// their text and count it as fts.Rank does.
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
				cols := [][]string{fts.Tokens(text), fts.Tokens(sender)}
				for _, pi := range multi {
					for ci, col := range cols {
						if n := fts.PhraseInstances(col, phrases[pi]); n > 0 {
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
	if df != nil {
		// A common stem was read in part: its n is the stored one.
		for i, ph := range phrases {
			if len(ph) == 1 {
				hits[i] = float64(df[ph[0]])
			}
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
		idf[i] = fts.IDF(nRow, n)
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
			score += fts.TermScore(idf[i], v, D, avgdl)
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
	timed := !q.From.IsZero() || !q.To.IsZero()
	if n := limit + len(q.Exclude); len(ranked) > n && !timed {
		ranked = ranked[:n] // a time range is applied to the messages first
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
		if m, ok := byID[r.id]; ok && q.inTime(m.Time) { // deleted meanwhile: left out
			out = append(out, Hit{Message: m, Score: r.score})
		}
	}
	if n := limit + len(q.Exclude); len(out) > n {
		out = out[:n]
	}
	return BudgetHits(out, q), nil
}
