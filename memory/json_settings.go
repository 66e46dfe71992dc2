package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/recallbot/recall/memory/internal/fts"
)

// The JSON backend's per-owner records: settings, memories and facts.

// Settings implements Backend.
func (j *JSON) Settings(ctx context.Context, owner string) (Settings, bool, error) {
	f, _, err := j.snapshot(ctx, owner)
	if err != nil {
		return Settings{Owner: owner}, false, err
	}
	if f.Data.Settings == nil {
		return Settings{Owner: owner}, false, nil
	}
	st := *f.Data.Settings
	st.Owner = owner
	return st, true, nil
}

// PutSettings implements Backend.
func (j *JSON) PutSettings(ctx context.Context, st Settings) error {
	return j.update(ctx, st.Owner, func(f *jsonFile) (bool, error) {
		f.putSettings(st)
		return true, nil
	})
}

func (f *jsonFile) putSettings(st Settings) {
	now := time.Now()
	if st.Created.IsZero() {
		st.Created = now
	}
	if st.Updated.IsZero() {
		st.Updated = now
	}
	st.Created, st.Updated = ms(st.Created), ms(st.Updated)
	if old := f.Data.Settings; old != nil {
		st.Created = old.Created // as SQLite's upsert: created_at stays
	}
	f.Data.Settings = &st
}

// Remember implements Backend.
func (j *JSON) Remember(ctx context.Context, owner string, m UserMemory, max int) error {
	return j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		_, err := f.remember(m, max)
		return err == nil, err
	})
}

func (f *jsonFile) remember(m UserMemory, max int) (added bool, err error) {
	i, exists := slices.BinarySearchFunc(f.Data.Memories, m.Key, func(a UserMemory, k string) int { return strings.Compare(a.Key, k) })
	if !exists && max > 0 && len(f.Data.Memories) >= max {
		return false, fmt.Errorf("%w: at most %d", ErrMemoryCap, max)
	}
	now := time.Now()
	if m.Created.IsZero() {
		m.Created = now
	}
	if m.Updated.IsZero() {
		m.Updated = now
	}
	m.Created, m.Updated = ms(m.Created), ms(m.Updated)
	if exists {
		old := &f.Data.Memories[i]
		old.Content, old.Updated, old.Author = m.Content, m.Updated, m.Author
		return false, nil
	}
	f.Data.Memories = slices.Insert(f.Data.Memories, i, m)
	return true, nil
}

// Memories implements Backend.
func (j *JSON) Memories(ctx context.Context, owner string) ([]UserMemory, error) {
	f, _, err := j.snapshot(ctx, owner)
	if err != nil {
		return nil, err
	}
	if len(f.Data.Memories) == 0 {
		return nil, nil
	}
	return slices.Clone(f.Data.Memories), nil
}

// Forget implements Backend.
func (j *JSON) Forget(ctx context.Context, owner, key string) (bool, error) {
	var found bool
	err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		found = false
		i := slices.IndexFunc(f.Data.Memories, func(m UserMemory) bool { return m.Key == key })
		if i < 0 {
			return false, nil
		}
		found = true
		f.Data.Memories = slices.Delete(f.Data.Memories, i, i+1)
		return true, nil
	})
	return found, err
}

// AddFact implements Backend.
func (j *JSON) AddFact(ctx context.Context, owner string, fact Fact) (Fact, bool, error) {
	var out Fact
	var merged bool
	err := j.update(ctx, owner, func(f *jsonFile) (bool, error) {
		out, merged = f.addFact(fact)
		return true, nil
	})
	if err != nil {
		return fact, false, err
	}
	return copyFact(out), merged, nil
}

func (f *jsonFile) addFact(fact Fact) (Fact, bool) {
	now := time.Now()
	if fact.Created.IsZero() {
		fact.Created = now
	}
	if fact.Updated.IsZero() {
		fact.Updated = fact.Created
	}
	fact.Created, fact.Updated = ms(fact.Created), ms(fact.Updated)
	for i, old := range f.Data.Facts {
		if SimilarFacts(old.Content, fact.Content) {
			m := mergeFact(old, fact)
			f.Data.Facts[i] = m
			return m, true
		}
	}
	fact.ID = f.NextFactID
	f.NextFactID++
	fact.Sources, fact.Tags = slices.Clone(fact.Sources), slices.Clone(fact.Tags)
	f.Data.Facts = append(f.Data.Facts, fact)
	return fact, false
}

// Facts implements Backend.
func (j *JSON) Facts(ctx context.Context, owner, text string, limit int) ([]Fact, error) {
	if limit <= 0 {
		limit = 20
	}
	f, o, err := j.snapshot(ctx, owner)
	if err != nil {
		return nil, err
	}
	facts := f.Data.Facts
	var out []Fact
	if phrases := fts.Phrases(text); len(phrases) > 0 {
		scores := fts.Rank(o.factTokens(facts), phrases, nil, 0)
		fts.SortScores(scores, func(doc int) int64 { return facts[doc].ID })
		for _, s := range scores {
			if len(out) == limit {
				break
			}
			out = append(out, copyFact(facts[s.Doc]))
		}
		return out, nil
	}
	order := make([]int, len(facts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		fa, fb := facts[order[a]], facts[order[b]]
		if ua, ub := fa.Updated.UnixMilli(), fb.Updated.UnixMilli(); ua != ub {
			return ua > ub
		}
		return fa.ID > fb.ID
	})
	for _, i := range order {
		if len(out) == limit {
			break
		}
		out = append(out, copyFact(facts[i]))
	}
	return out, nil
}
