package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

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

// pgGenericPlan makes the statements after it in the same transaction
// run their kept (generic) plans.
const pgGenericPlan = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// pgSearchConv reads the searched conversation's BM25 statistics.
const pgSearchConv = `SELECT id, search_docs, search_tokens FROM conversations WHERE key = $1`

// pgSearchActive reads the ids of the conversation's active messages (the
// recent window: few), which an archive search leaves out.
const pgSearchActive = `SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conv WHERE c.key = $1 AND m.is_active`

// pgSearchPostings reads, in one statement, the postings a search ranks:
// one row per stem of $2 (its 1-based position in $2, its n from
// term_stats, and its postings as arrays, newest message first). In a
// conversation of more than $5 messages it reads at most $3 postings in
// all, as Postgres.Search says: the stems rarest first (ties in query
// order), each whole while it fits what is left, else its newest share of
// what is left, at least $4; the recursive part is that loop. In a smaller
// conversation every posting is read. With $6 above 0, a stem in more than
// that share of the conversation's messages has no row (Query.MaxShare).
const pgSearchPostings = `WITH RECURSIVE
c AS (SELECT id, search_docs FROM conversations WHERE key = $1),
s AS (SELECT t.i, t.term, coalesce(ts.df, 0) AS df, row_number() OVER (ORDER BY coalesce(ts.df, 0), t.i) AS k
	FROM unnest($2::bytea[]) WITH ORDINALITY t(term, i)
	LEFT JOIN term_stats ts ON ts.conv = (SELECT id FROM c) AND ts.term = t.term
	WHERE $6::float8 <= 0 OR coalesce(ts.df, 0) <= $6 * (SELECT search_docs FROM c)),
l(k, i, lim, rest) AS (
	SELECT 0::bigint, 0::bigint, 0::bigint, $3::bigint
	UNION ALL
	SELECT s.k, s.i, x.lim, greatest(0, l.rest - x.lim)
	FROM l JOIN s ON s.k = l.k + 1
	CROSS JOIN LATERAL (SELECT CASE WHEN s.df <= l.rest THEN s.df
		ELSE least(s.df, greatest(l.rest / (cardinality($2::bytea[]) - l.k), $4::bigint)) END AS lim) x)
SELECT s.i, s.df, p.msgs, p.tf_text, p.tf_sender, p.doc_len
FROM l JOIN s ON s.i = l.i
CROSS JOIN LATERAL (
	SELECT array_agg(q.msg) AS msgs, array_agg(q.tf_text) AS tf_text, array_agg(q.tf_sender) AS tf_sender, array_agg(q.doc_len) AS doc_len
	FROM (SELECT msg, tf_text, tf_sender, doc_len FROM message_terms
		WHERE conv = (SELECT id FROM c) AND term = s.term ORDER BY msg DESC
		LIMIT CASE WHEN (SELECT search_docs FROM c) <= $5::bigint THEN NULL ELSE l.lim END) q) p
WHERE l.k > 0`

// pgPostings are one stem's postings as pgSearchPostings returns them.
type pgPostings struct {
	msgs             []int64
	tfText, tfSender []int32
	docLen           []int32
	df               int64
}

// newestFirst makes sure the postings are in the order ranking walks them:
// array_agg keeps its ordered input's order in practice, which PostgreSQL
// does not promise; a check costs less than an ORDER BY in it.
func (ps *pgPostings) newestFirst() {
	if slices.IsSortedFunc(ps.msgs, func(a, b int64) int { return cmp.Compare(b, a) }) {
		return
	}
	at := make([]int, len(ps.msgs))
	for i := range at {
		at[i] = i
	}
	sort.Slice(at, func(i, j int) bool { return ps.msgs[at[i]] > ps.msgs[at[j]] })
	msgs, tfText, tfSender, docLen := slices.Clone(ps.msgs), slices.Clone(ps.tfText), slices.Clone(ps.tfSender), slices.Clone(ps.docLen)
	for i, j := range at {
		ps.msgs[i], ps.tfText[i], ps.tfSender[i], ps.docLen[i] = msgs[j], tfText[j], tfSender[j], docLen[j]
	}
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
// Round trips: the conversation's statistics, the postings of every stem
// (pgSearchPostings, one statement) and, for an archive search, the active
// messages' ids go to the server as one batch; then the messages returned
// are read (and before that, only for a phrase of several tokens, the text
// of the messages that may hold it).
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
	hits, _, err := p.search(ctx, key, q, false)
	return hits, err
}

// SearchWithin returns what Search returns for q and for q over all time,
// from one read of the postings and one read of the messages (two
// searches would read both twice, and the timed one every ranked message).
func (p *Postgres) SearchWithin(ctx context.Context, key pipeline.Key, q Query) (within, all []Hit, err error) {
	return p.search(ctx, key, q, true)
}

// pgSearchRead reads the messages of a ranking: $2's, those written in
// [$3, $4] (milliseconds: a little wider than the query's range, which is
// applied exactly once read) or among $5 (the best over all time).
const pgSearchRead = `SELECT ` + pgMsgColumns + ` FROM messages m WHERE m.conv = $1 AND m.id = ANY($2)
	AND (m.created_at BETWEEN $3 AND $4 OR m.id = ANY($5))`

// search runs q; with also, it also returns the same query's hits over
// all time (all), from the same postings.
func (p *Postgres) search(ctx context.Context, key pipeline.Key, q Query, also bool) ([]Hit, []Hit, error) {
	phrases := fts.Phrases(q.Text)
	if len(phrases) == 0 {
		return nil, nil, ctx.Err()
	}
	termAt := map[string]int{}
	var terms [][]byte
	for _, ph := range phrases {
		for _, t := range ph {
			if _, ok := termAt[t]; !ok {
				termAt[t] = len(terms)
				terms = append(terms, []byte(t))
			}
		}
	}
	if len(terms) == 0 {
		return nil, nil, nil
	}
	tune := p.tuning()
	if p.searchTrace != nil {
		p.searchTrace()
	}
	b := &pgx.Batch{}
	// The batch is one implicit transaction: the setting lasts until its
	// end. It keeps pgSearchPostings' plan, which PostgreSQL would make
	// again at every call (its array parameter makes the kept, generic
	// plan look dearer than one made for the values): a third of a
	// millisecond.
	b.Queue(pgGenericPlan)
	b.Queue(pgSearchConv, key.String())
	// Query.MaxShare: a word in more than that share of the conversation's
	// messages is left out (not read: it counts in no message), when every
	// phrase is one word (a phrase of several is counted from its words).
	maxShare := q.MaxShare
	for _, ph := range phrases {
		if len(ph) > 1 {
			maxShare = 0
		}
	}
	b.Queue(pgSearchPostings, key.String(), terms, tune.budget, tune.minPer, tune.exactUpTo, maxShare)
	if q.ArchivedOnly {
		b.Queue(pgSearchActive, key.String())
	}
	var conv, nDocs, nTokens int64
	post := make([]pgPostings, len(terms))
	var active map[int64]bool
	err := func() (err error) {
		br := p.pool.SendBatch(ctx, b)
		defer func() {
			if cerr := br.Close(); err == nil {
				err = cerr
			}
		}()
		if _, err := br.Exec(); err != nil {
			return err
		}
		err = br.QueryRow().Scan(&conv, &nDocs, &nTokens)
		if errors.Is(err, pgx.ErrNoRows) {
			conv = 0
		} else if err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var i int
			var ps pgPostings
			if err := rows.Scan(&i, &ps.df, &ps.msgs, &ps.tfText, &ps.tfSender, &ps.docLen); err != nil {
				rows.Close()
				return err
			}
			ps.newestFirst()
			post[i-1] = ps
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !q.ArchivedOnly {
			return nil
		}
		rows, err = br.Query()
		if err != nil {
			return err
		}
		active = map[int64]bool{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			active[id] = true
		}
		rows.Close()
		return rows.Err()
	}()
	if err != nil {
		return nil, nil, fmt.Errorf("searching %s: %w", key, err)
	}
	if conv == 0 || nDocs <= 0 {
		return nil, nil, nil
	}
	pruned := nDocs > tune.exactUpTo

	// n of each phrase (hits) and, for the phrases of several tokens, their
	// weighted instances in the messages that hold them (multiFreq).
	hits := make([]float64, len(phrases))
	var multi []int
	for pi, ph := range phrases {
		switch {
		case len(ph) == 1 && pruned:
			hits[pi] = float64(post[termAt[ph[0]]].df) // read in part: the stored n
		case len(ph) == 1:
			hits[pi] = float64(len(post[termAt[ph[0]]].msgs)) // every posting is a message holding it
		case len(ph) > 1:
			multi = append(multi, pi)
		}
	}
	var multiFreq map[int64][]float64
	if len(multi) > 0 {
		multiFreq, err = p.countPhrases(ctx, conv, phrases, multi, termAt, post)
		if err != nil {
			return nil, nil, fmt.Errorf("searching %s: %w", key, err)
		}
		for _, f := range multiFreq {
			for pi, v := range f {
				if v > 0 {
					hits[pi]++
				}
			}
		}
	}
	nRow := float64(nDocs)
	avgdl := float64(nTokens) / nRow
	idf := make([]float64, len(phrases))
	for i, n := range hits {
		idf[i] = fts.IDF(nRow, n)
	}

	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	keep := limit + len(q.Exclude) // over all time: the best are enough
	keepQ := keep
	if q.timed() {
		keepQ = -1 // a time range is applied to the messages first: every one is ranked
	}
	ranked := pgRankPostings(post, phrases, termAt, multiFreq, idf, avgdl, active, keepQ)
	if len(ranked) == 0 {
		return nil, nil, nil
	}
	// The excluded messages are kept in the ranking (they take their
	// places, as on SQLite) but not read: BudgetHits would skip them.
	skip := make(map[int64]bool, len(q.Exclude))
	for _, id := range q.Exclude {
		skip[id] = true
	}
	ids := make([]int64, 0, len(ranked))
	for _, r := range ranked {
		if !skip[r.id] {
			ids = append(ids, r.id)
		}
	}
	best := ranked[:min(keep, len(ranked))] // all's ranking
	var rows pgx.Rows
	if q.timed() {
		// Of a timed ranking, only the messages in the range are read, and
		// all's best.
		from, to := int64(math.MinInt64), int64(math.MaxInt64)
		if !q.From.IsZero() {
			from = q.From.UnixMilli() - 1
		}
		if !q.To.IsZero() {
			to = q.To.UnixMilli() + 1
		}
		var bestIDs []int64
		if also {
			bestIDs = make([]int64, 0, len(best))
			for _, r := range best {
				if !skip[r.id] {
					bestIDs = append(bestIDs, r.id)
				}
			}
		}
		rows, err = p.pool.Query(ctx, pgSearchRead, conv, ids, from, to, bestIDs)
	} else {
		rows, err = p.pool.Query(ctx, `SELECT `+pgMsgColumns+` FROM messages m WHERE m.conv = $1 AND m.id = ANY($2)`, conv, ids)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("searching %s: %w", key, err)
	}
	msgs, err := pgScanMessages(rows, key)
	if err != nil {
		return nil, nil, fmt.Errorf("searching %s: %w", key, err)
	}
	byID := make(map[int64]Message, len(msgs))
	for _, m := range msgs {
		byID[m.ID] = m
	}
	out := make([]Hit, 0, len(ranked))
	for _, r := range ranked {
		if m, ok := byID[r.id]; ok && q.inTime(m.Time) { // excluded, or deleted meanwhile: left out
			out = append(out, Hit{Message: m, Score: r.score})
		}
	}
	if len(out) > keepQ && keepQ >= 0 {
		out = out[:keepQ]
	}
	got := BudgetHits(out, q)
	if !also {
		return got, nil, nil
	}
	if !q.timed() {
		return got, slices.Clone(got), nil
	}
	var all []Hit
	for _, r := range best {
		if m, ok := byID[r.id]; ok {
			all = append(all, Hit{Message: m, Score: r.score})
		}
	}
	q.From, q.To = time.Time{}, time.Time{}
	return got, BudgetHits(all, q), nil
}

// countPhrases counts the phrases of several tokens (multi) as fts.Rank
// does, in the messages read that hold every stem of one (only those may
// hold it: their text is read): per message, the weighted instances of
// each phrase (indexed as phrases; only multi's are set).
func (p *Postgres) countPhrases(ctx context.Context, conv int64, phrases [][]string, multi []int, termAt map[string]int, post []pgPostings) (map[int64][]float64, error) {
	held := make([]map[int64]bool, len(post)) // the messages read per stem, made when needed
	holds := func(t int, msg int64) bool {
		if held[t] == nil {
			held[t] = make(map[int64]bool, len(post[t].msgs))
			for _, m := range post[t].msgs {
				held[t][m] = true
			}
		}
		return held[t][msg]
	}
	cand := map[int64]bool{}
	for _, pi := range multi {
		for _, msg := range post[termAt[phrases[pi][0]]].msgs {
			all := true
			for _, t := range phrases[pi][1:] {
				if !holds(termAt[t], msg) {
					all = false
					break
				}
			}
			if all {
				cand[msg] = true
			}
		}
	}
	if len(cand) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(cand))
	for id := range cand {
		ids = append(ids, id)
	}
	rows, err := p.pool.Query(ctx, `SELECT id, text, sender_name FROM messages WHERE conv = $1 AND id = ANY($2)`, conv, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	freq := map[int64][]float64{}
	for rows.Next() {
		var id int64
		var text, sender string
		if err := rows.Scan(&id, &text, &sender); err != nil {
			return nil, err
		}
		cols := [][]string{fts.Tokens(text), fts.Tokens(sender)}
		for _, pi := range multi {
			for ci, col := range cols {
				if n := fts.PhraseInstances(col, phrases[pi]); n > 0 {
					f := freq[id]
					if f == nil {
						f = make([]float64, len(phrases))
						freq[id] = f
					}
					f[pi] += messageWeights[ci] * float64(n)
				}
			}
		}
	}
	return freq, rows.Err()
}

// pgScored is a message and its score.
type pgScored struct {
	id    int64
	score float64
}

// pgBetter orders hits: the higher score first, then the newer message.
func pgBetter(a, b pgScored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id > b.id
}

// pgRankPostings scores every message read that holds a phrase (and is
// not active) exactly as fts.Rank does: per phrase in query order, its
// weighted instances (a single stem's from its posting, a longer phrase's
// from multiFreq) through fts.TermScore, summed. Each stem's postings are
// newest first, so the messages are met by walking the lists together,
// newest first (no map). It returns the keep best (all when keep < 0),
// best first.
func pgRankPostings(post []pgPostings, phrases [][]string, termAt map[string]int, multiFreq map[int64][]float64, idf []float64, avgdl float64, active map[int64]bool, keep int) []pgScored {
	// single[pi]: the stem of a one-token phrase, else -1.
	single := make([]int, len(phrases))
	for pi, ph := range phrases {
		single[pi] = -1
		if len(ph) == 1 {
			single[pi] = termAt[ph[0]]
		}
	}
	pos := make([]int, len(post)) // each list's next posting
	at := make([]int, len(post))  // each list's posting of the message scored, or -1
	var ranked []pgScored
	if keep >= 0 {
		ranked = make([]pgScored, 0, keep+1)
	}
	for {
		msg := int64(-1)
		for t := range post {
			if pos[t] < len(post[t].msgs) && post[t].msgs[pos[t]] > msg {
				msg = post[t].msgs[pos[t]]
			}
		}
		if msg < 0 {
			break
		}
		var D float64
		for t := range post {
			at[t] = -1
			if pos[t] < len(post[t].msgs) && post[t].msgs[pos[t]] == msg {
				at[t] = pos[t]
				D = float64(post[t].docLen[pos[t]])
				pos[t]++
			}
		}
		if active[msg] {
			continue
		}
		mf := multiFreq[msg]
		score, any := 0.0, false
		for pi := range phrases {
			var f float64
			if t := single[pi]; t >= 0 {
				if j := at[t]; j >= 0 {
					f = float64(post[t].tfText[j])*messageWeights[0] + float64(post[t].tfSender[j])*messageWeights[1]
				}
			} else if mf != nil {
				f = mf[pi]
			}
			if f > 0 {
				any = true
			}
			score += fts.TermScore(idf[pi], f, D, avgdl)
		}
		if !any {
			continue
		}
		s := pgScored{msg, score}
		if keep < 0 {
			ranked = append(ranked, s)
			continue
		}
		if len(ranked) == keep && (keep == 0 || !pgBetter(s, ranked[keep-1])) {
			continue
		}
		// Insert in order into the few best kept.
		i := sort.Search(len(ranked), func(i int) bool { return pgBetter(s, ranked[i]) })
		if len(ranked) < keep {
			ranked = append(ranked, pgScored{})
		}
		copy(ranked[i+1:], ranked[i:len(ranked)-1])
		ranked[i] = s
	}
	if keep < 0 {
		sort.Slice(ranked, func(i, j int) bool { return pgBetter(ranked[i], ranked[j]) })
	}
	return ranked
}
