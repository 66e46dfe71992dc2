package memory

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/ncruces/go-sqlite3"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// ErrNoTermDocs: the backend does not count messages per word (TermDocs).
var ErrNoTermDocs = errors.New("this store does not count messages per word")

// TermDocs reports how many messages of the conversation contain each of
// words (stemmed as the search stems them: "moving" counts the messages with
// "move"), and how many messages the search counts in all: the document
// frequencies that weigh a word by its rarity in this conversation (the
// assembler's feedback search picks its words with them). In a conversation
// of more than 1,024 messages the counts are estimated from its newest
// 1,024, as the search estimates a common word's, so the cost does not grow
// with the archive. A word's count stops once it is in more than maxShare
// of the messages (a word too common to matter costs no more): it is then
// reported as more than maxShare × docs. A word that is no single search
// token (a stopword, a phrase) counts -1. ErrNoTermDocs: the backend cannot
// count (only SQLite can).
func (s *Store) TermDocs(ctx context.Context, key pipeline.Key, words []string, maxShare float64) (docs int64, n []int, err error) {
	b, ok := s.backendFor(key.Owner()).(interface {
		TermDocs(ctx context.Context, key pipeline.Key, words []string, maxShare float64) (int64, []int, error)
	})
	if !ok {
		return 0, nil, ErrNoTermDocs
	}
	return b.TermDocs(ctx, key, words, maxShare)
}

// TermDocs answers Store.TermDocs from the words' doclists: in a
// conversation of up to the search's window (1,024 messages) exactly; in a
// bigger one in its newest window only, scaled to the whole conversation
// (as the search estimates a common term's frequency), so the cost is
// bounded by the window whatever the archive's size.
func (s *SQLite) TermDocs(ctx context.Context, key pipeline.Key, words []string, maxShare float64) (docs int64, n []int, err error) {
	n = make([]int, len(words))
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("counting words of %s: %w", key, err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		rc, ok := dc.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		c := rc.Raw()
		old := c.SetInterrupt(ctx)
		defer c.SetInterrupt(old)
		if err := c.Exec(`BEGIN`); err != nil {
			return err
		}
		defer func() {
			c.SetInterrupt(context.Background())
			_ = c.Exec(`ROLLBACK`)
		}()
		v, _ := s.searchConns.LoadOrStore(c, &searchConn{stmts: map[string]*sqlite3.Stmt{}})
		sr := &searchRun{c: c, key: key, sc: v.(*searchConn), tune: s.searchTuning()}
		defer sr.close()
		found := false
		if err := sr.each(sqlSearchConv, func(st *sqlite3.Stmt) bool {
			sr.conv, sr.nDocs, found = st.ColumnInt64(0), st.ColumnInt64(1), true
			return true
		}, key.String()); err != nil || !found || sr.nDocs <= 0 {
			return err
		}
		docs = sr.nDocs
		sr.prefix = ftsConvPrefix(sr.conv)
		if err := sr.findWindow(); err != nil {
			return err
		}
		// Counting a word stops once it is in more than maxShare of the
		// window's messages.
		most := int(maxShare * float64(sr.winSize))
		for i, w := range words {
			toks := fts.Tokens(w)
			if len(toks) != 1 || len(fts.Terms(w)) != 1 {
				n[i] = -1
				continue
			}
			c := 0
			if err := sr.each(sqlWindowTermRows, func(*sqlite3.Stmt) bool {
				c++
				return c <= most
			}, matchTerm(ftsTerm(sr.prefix, ftsKindText, toks[0])), sr.cutRowid); err != nil {
				return err
			}
			n[i] = int(math.Ceil(float64(c) * float64(sr.nDocs) / float64(sr.winSize)))
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("counting words of %s: %w", key, err)
	}
	return docs, n, nil
}

// sqlWindowTermRows is a term's doclist in the window (rowid >= ?2), newest
// first.
const sqlWindowTermRows = `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid >= ?2 ORDER BY rowid DESC`
