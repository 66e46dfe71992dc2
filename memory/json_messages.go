package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/recallbot/recall/memory/internal/fts"
	"github.com/recallbot/recall/pipeline"
)

// The JSON backend's conversations: messages, summaries and search.

// Append implements Backend. Messages of several owners are written owner
// by owner (one file each); an error stops at that owner.
func (j *JSON) Append(ctx context.Context, msgs []Message) (int, error) {
	if err := j.check(ctx); err != nil {
		return 0, err
	}
	var owners []string
	byOwner := map[string][]Message{}
	for _, m := range msgs {
		if err := m.Key.Validate(); err != nil {
			return 0, err
		}
		if !m.Role.Valid() {
			return 0, fmt.Errorf("storing message in %s: invalid role %q", m.Key, m.Role)
		}
		if text, cut := CutText(m.Text); cut {
			m.Text, m.Tokens = text, estimateTokens(text)
		}
		o := m.Key.Owner()
		if _, ok := byOwner[o]; !ok {
			owners = append(owners, o)
		}
		byOwner[o] = append(byOwner[o], m)
	}
	total := 0
	for _, owner := range owners {
		var added int
		err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
			added = 0
			convs := len(f.Data.Conversations)
			platform := map[string]map[string]bool{} // conversation → platform ids
			for _, m := range byOwner[owner] {
				c, err := f.ensureConv(m.Key)
				if err != nil {
					return false, err
				}
				if m.PlatformID != "" {
					ids := platform[c.Key]
					if ids == nil {
						ids = map[string]bool{}
						for _, old := range c.Messages {
							if old.PlatformID != "" {
								ids[old.PlatformID] = true
							}
						}
						platform[c.Key] = ids
					}
					if ids[m.PlatformID] {
						continue
					}
					ids[m.PlatformID] = true
				}
				if m.Tokens <= 0 {
					m.Tokens = estimateTokens(m.Text)
				}
				if m.Time.IsZero() {
					m.Time = time.Now()
				}
				m.Time = ms(m.Time)
				m.Active = m.Active || m.ChunkID == 0
				m.ID = f.NextMessageID
				m.Key = pipeline.Key{}
				f.NextMessageID++
				c.Messages = append(c.Messages, m)
				added++
				if m.Role == RoleAssistant {
					c.TurnsSinceSummary++
				}
			}
			// A new conversation is a change even when every message was
			// a duplicate (as in SQLite, where the row stays).
			return added > 0 || len(f.Data.Conversations) != convs, nil
		})
		if err != nil {
			return total, fmt.Errorf("storing messages of %s: %w", owner, err)
		}
		total += added
	}
	return total, nil
}

// Lookup implements Backend.
func (j *JSON) Lookup(ctx context.Context, key pipeline.Key, platformID string) (bool, bool, error) {
	if platformID == "" {
		return false, false, j.check(ctx)
	}
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return false, false, err
	}
	c := f.conv(key)
	if c == nil {
		return false, false, nil
	}
	var stored, answered bool
	for _, m := range c.Messages {
		if m.PlatformID == platformID {
			stored = true
		}
		if m.ReplyTo == platformID && m.Role == RoleAssistant {
			answered = true
		}
	}
	return stored, answered, nil
}

// Recent implements Backend.
func (j *JSON) Recent(ctx context.Context, key pipeline.Key, limit, tokenBudget int) ([]Message, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	var out []Message
	used := 0
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if !m.Active {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		if tokenBudget > 0 && used+m.Tokens > tokenBudget {
			break
		}
		used += m.Tokens
		out = append(out, m)
	}
	reverse(out)
	return withKey(out, key), nil
}

// Active implements Backend.
func (j *JSON) Active(ctx context.Context, key pipeline.Key) ([]Message, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	var out []Message
	for _, m := range c.Messages {
		if m.Active {
			out = append(out, m)
		}
	}
	return withKey(out, key), nil
}

// Archive implements Backend.
func (j *JSON) Archive(ctx context.Context, key pipeline.Key, ids []int64, sum Summary, turnsSeen int) (Summary, error) {
	if len(ids) == 0 {
		return Summary{}, fmt.Errorf("%w: nothing to archive", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := j.update(ctx, key.Owner(), func(f *jsonFile) (bool, error) {
		c := f.conv(key)
		if c == nil {
			return false, fmt.Errorf("archiving in %s: %w", key, ErrNotFound)
		}
		want := make(map[int64]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		var idx []int
		for i, m := range c.Messages {
			if want[m.ID] && m.Active {
				idx = append(idx, i)
			}
		}
		if len(idx) != len(ids) {
			return false, fmt.Errorf("%w: %d of %d messages still active in %s", ErrConflict, len(idx), len(ids), key)
		}
		chunk := f.nextChunk(c.Key)
		f.setNextChunk(c.Key, chunk+1)
		var from, to int64
		for n, i := range idx {
			m := &c.Messages[i]
			m.Active, m.ChunkID = false, chunk
			t := m.Time.UnixMilli()
			if n == 0 || t < from {
				from = t
			}
			if n == 0 || t > to {
				to = t
			}
		}
		sum.Level, sum.Sources, sum.Active = 1, []int64{chunk}, true
		sum.From, sum.To = fromMillis(from), fromMillis(to)
		f.insertSummary(c, &sum)
		c.TurnsSinceSummary = max(0, c.TurnsSinceSummary-turnsSeen)
		c.LastSummary = lastSummary(sum.Created)
		return true, nil
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

// Fold implements Backend.
func (j *JSON) Fold(ctx context.Context, key pipeline.Key, ids []int64, sum Summary) (Summary, error) {
	if len(ids) == 0 || sum.Level < 2 {
		return Summary{}, fmt.Errorf("%w: fold needs sources and a level above 1", ErrConflict)
	}
	ids = uniqueIDs(ids)
	err := j.update(ctx, key.Owner(), func(f *jsonFile) (bool, error) {
		c := f.conv(key)
		if c == nil {
			return false, fmt.Errorf("folding in %s: %w", key, ErrNotFound)
		}
		want := make(map[int64]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		var idx []int
		for i, s := range c.Summaries {
			if want[s.ID] && s.Active && s.Level == sum.Level-1 {
				idx = append(idx, i)
			}
		}
		if len(idx) != len(ids) {
			return false, fmt.Errorf("%w: %d of %d level-%d summaries still active in %s", ErrConflict, len(idx), len(ids), sum.Level-1, key)
		}
		var from, to int64
		for n, i := range idx {
			s := &c.Summaries[i]
			s.Active = false
			if a := s.From.UnixMilli(); n == 0 || a < from {
				from = a
			}
			if b := s.To.UnixMilli(); n == 0 || b > to {
				to = b
			}
		}
		sum.Sources, sum.Active = ids, true
		sum.From, sum.To = fromMillis(from), fromMillis(to)
		f.insertSummary(c, &sum)
		return true, nil
	})
	if err != nil {
		return Summary{}, err
	}
	sum.Key = key
	return sum, nil
}

// Summaries implements Backend.
func (j *JSON) Summaries(ctx context.Context, key pipeline.Key, activeOnly bool) ([]Summary, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	var out []Summary
	for _, s := range c.Summaries {
		if !activeOnly || s.Active {
			out = append(out, copySummary(s, key))
		}
	}
	return out, nil
}

// Provenance implements Backend.
func (j *JSON) Provenance(ctx context.Context, key pipeline.Key, summaryID int64) ([]Message, error) {
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	chunks, ok := chunksOf(c.Summaries, summaryID)
	if !ok {
		return nil, fmt.Errorf("summary %d in %s: %w", summaryID, key, ErrNotFound)
	}
	in := make(map[int64]bool, len(chunks))
	for _, ch := range chunks {
		in[ch] = true
	}
	var out []Message
	for _, m := range c.Messages {
		if in[m.ChunkID] {
			out = append(out, m)
		}
	}
	return withKey(out, key), nil
}

// Status implements Backend.
func (j *JSON) Status(ctx context.Context, key pipeline.Key) (Status, error) {
	st := Status{ActiveByLevel: map[int]int{}}
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return st, err
	}
	c := f.conv(key)
	if c == nil {
		return st, nil
	}
	st.TurnsSinceSummary, st.LastSummary = c.TurnsSinceSummary, c.LastSummary
	for _, m := range c.Messages {
		st.Total++
		if m.Active {
			st.Active++
		}
	}
	st.Archived = st.Total - st.Active
	for _, s := range c.Summaries {
		if s.Active {
			st.ActiveByLevel[s.Level]++
		}
		st.HighestLevel = max(st.HighestLevel, s.Level)
	}
	return st, nil
}

// Around implements Backend.
func (j *JSON) Around(ctx context.Context, key pipeline.Key, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, j.check(ctx)
	}
	f, _, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil {
		return nil, nil
	}
	byID := func(a, b Message) int { return cmp.Compare(a.ID, b.ID) }
	msgs := c.Messages
	if !slices.IsSortedFunc(msgs, byID) {
		msgs = slices.Clone(msgs)
		slices.SortFunc(msgs, byID)
	}
	take := make([]bool, len(msgs))
	for _, id := range ids {
		i, ok := slices.BinarySearchFunc(msgs, id, func(m Message, id int64) int { return cmp.Compare(m.ID, id) })
		if !ok {
			continue
		}
		for k := max(0, i-1); k <= min(len(msgs)-1, i+1); k++ {
			take[k] = true
		}
	}
	var out []Message
	for i, m := range msgs {
		if take[i] {
			out = append(out, m)
		}
	}
	return withKey(out, key), nil
}

// Search implements Backend.
func (j *JSON) Search(ctx context.Context, key pipeline.Key, q Query) ([]Hit, error) {
	phrases := fts.Phrases(q.Text)
	if len(phrases) == 0 {
		return nil, j.check(ctx)
	}
	f, o, err := j.snapshot(ctx, key.Owner())
	if err != nil {
		return nil, err
	}
	c := f.conv(key)
	if c == nil || len(c.Messages) == 0 {
		return nil, nil
	}
	docs := o.messageDocs(c.Messages)
	scores := fts.Rank(docs, phrases, messageWeights, messageExtraTokens)
	kept := scores[:0]
	for _, s := range scores {
		if m := &c.Messages[s.Doc]; (!q.ArchivedOnly || !m.Active) && q.inTime(m.Time) {
			kept = append(kept, s)
		}
	}
	fts.SortScores(kept, func(doc int) int64 { return c.Messages[doc].ID })
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	if n := limit + len(q.Exclude); len(kept) > n {
		kept = kept[:n]
	}
	hits := make([]Hit, len(kept))
	for i, s := range kept {
		m := c.Messages[s.Doc]
		m.Key = key
		hits[i] = Hit{Message: m, Score: s.Score}
	}
	return BudgetHits(hits, q), nil
}

// messageDocs returns the tokens of each message, tokenizing each message
// once for the life of the cache.
func (o *jsonOwner) messageDocs(msgs []Message) []*fts.Doc {
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	if o.msgDocs == nil {
		o.msgDocs = map[int64]*fts.Doc{}
	}
	docs := make([]*fts.Doc, len(msgs))
	for i, m := range msgs {
		d := o.msgDocs[m.ID]
		if d == nil {
			d = &fts.Doc{Cols: [][]string{fts.Tokens(m.Text), fts.Tokens(m.SenderName)}}
			o.msgDocs[m.ID] = d
		}
		docs[i] = d
	}
	return docs
}

func (o *jsonOwner) factTokens(facts []Fact) []*fts.Doc {
	o.cacheMu.Lock()
	defer o.cacheMu.Unlock()
	if o.factDocs == nil {
		o.factDocs = map[string][]string{}
	}
	docs := make([]*fts.Doc, len(facts))
	for i, f := range facts {
		toks, ok := o.factDocs[f.Content]
		if !ok {
			toks = fts.Tokens(f.Content)
			o.factDocs[f.Content] = toks
		}
		docs[i] = &fts.Doc{Cols: [][]string{toks}}
	}
	return docs
}
