package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// The JSON backend's whole-owner operations: purge, export, import and
// the list of owners.

// Purge implements Backend, with the rules of the SQLite backend (see
// planPurge): summaries that reach into the purged period are deleted with
// everything built on them, and what they covered that survives comes back
// into play.
func (j *JSON) Purge(ctx context.Context, scope PurgeScope) (PurgeReport, error) {
	var rep PurgeReport
	if scope.Owner == "" {
		return rep, fmt.Errorf("purge: owner is required")
	}
	var only *pipeline.Key
	if !scope.Key.IsZero() {
		only = &scope.Key
	}
	all := scope.OlderThan.IsZero()
	cutoff := scope.OlderThan.UnixMilli()
	var o *jsonOwner
	err := j.update(ctx, scope.Owner, func(f *jsonFile) (bool, error) {
		rep = PurgeReport{}
		changed := false
		var convs []ConversationData
		for _, c := range f.Data.Conversations {
			if only != nil && c.Key != only.String() {
				convs = append(convs, c)
				continue
			}
			plan := planPurge(c.Summaries, all, scope.OlderThan)
			if len(plan.reactivateChunks) > 0 || len(plan.reactivateSummaries) > 0 {
				changed = true
			}
			if all {
				changed = true
				rep.Messages += int64(len(c.Messages))
				rep.Summaries += int64(len(c.Summaries))
				delete(f.NextChunk, c.Key)
				continue // the conversation goes
			}
			var msgs []Message
			for _, m := range c.Messages {
				if m.Time.UnixMilli() < cutoff {
					rep.Messages++
				} else {
					msgs = append(msgs, m)
				}
			}
			var gone int64
			c.Messages, c.Summaries, gone = plan.applyTo(msgs, c.Summaries)
			rep.Summaries += gone
			convs = append(convs, c)
		}
		f.Data.Conversations = convs
		var facts []Fact
		for _, fc := range f.Data.Facts {
			var gone bool
			switch {
			case only != nil && all:
				gone = fc.Key == only.String()
			case only != nil:
				gone = fc.Key == only.String() && fc.Created.UnixMilli() < cutoff
			case all:
				gone = true
			default:
				gone = fc.Created.UnixMilli() < cutoff
			}
			if gone {
				rep.Facts++
			} else {
				facts = append(facts, fc)
			}
		}
		f.Data.Facts = facts
		if only == nil && all {
			rep.Memories = int64(len(f.Data.Memories))
			if f.Data.Settings != nil || len(f.Data.Memories) > 0 {
				changed = true
			}
			f.Data.Memories, f.Data.Settings = nil, nil
		}
		return changed || rep != PurgeReport{}, nil
	})
	if err != nil {
		return PurgeReport{}, err
	}
	j.mu.Lock()
	o = j.owners[scope.Owner]
	j.mu.Unlock()
	if o != nil && rep != (PurgeReport{}) {
		o.resetCache() // purged text leaves the search cache too
	}
	return rep, nil
}

func idSet(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// Export implements Backend.
func (j *JSON) Export(ctx context.Context, owner string, key *pipeline.Key) (OwnerData, error) {
	d := OwnerData{Owner: owner}
	f, _, err := j.snapshot(ctx, owner)
	if err != nil {
		return d, err
	}
	if key == nil {
		if f.Data.Settings != nil {
			st := *f.Data.Settings
			st.Owner = owner
			d.Settings = &st
		}
		if len(f.Data.Memories) > 0 {
			d.Memories = slices.Clone(f.Data.Memories)
		}
	}
	for _, fc := range f.Data.Facts {
		if key == nil || fc.Key == key.String() {
			d.Facts = append(d.Facts, copyFact(fc))
		}
	}
	for _, c := range f.Data.Conversations {
		if key != nil && c.Key != key.String() {
			continue
		}
		k, err := pipeline.ParseKey(c.Key)
		if err != nil {
			return d, err
		}
		cd := ConversationData{Key: c.Key, TurnsSinceSummary: c.TurnsSinceSummary, LastSummary: c.LastSummary}
		if len(c.Messages) > 0 {
			cd.Messages = withKey(slices.Clone(c.Messages), k)
		}
		for _, s := range c.Summaries {
			cd.Summaries = append(cd.Summaries, copySummary(s, k))
		}
		d.Conversations = append(d.Conversations, cd)
	}
	return d, nil
}

// Import implements Backend, with the duplicate rules of the SQLite backend:
// a message is already there when its platform id is (or, without one, a
// message with the same role, time and text); a summary when one with the
// same level, text, creation time and sources is.
func (j *JSON) Import(ctx context.Context, d OwnerData) (ImportReport, error) {
	if err := d.Validate(); err != nil {
		return ImportReport{}, err
	}
	d, cut := cutOwnerData(d)
	var rep ImportReport
	err := j.update(ctx, d.Owner, func(f *jsonFile) (bool, error) {
		rep = ImportReport{Cut: cut}
		if d.Settings != nil {
			st := *d.Settings
			st.Owner = d.Owner
			f.putSettings(st)
		}
		for _, m := range d.Memories {
			added, err := f.remember(m, 0)
			if err != nil {
				return false, err
			}
			if added {
				rep.Memories++
			}
		}
		for _, fc := range d.Facts {
			if _, merged := f.addFact(fc); !merged {
				rep.Facts++
			}
		}
		for _, c := range d.Conversations {
			key, _ := pipeline.ParseKey(c.Key)
			n, err := f.importConversation(key, c)
			if err != nil {
				return false, fmt.Errorf("importing %s: %w", key, err)
			}
			rep = rep.Add(n)
		}
		return true, nil
	})
	if err != nil {
		return ImportReport{}, err
	}
	return rep, nil
}

func (f *jsonFile) importConversation(key pipeline.Key, c ConversationData) (ImportReport, error) {
	var rep ImportReport
	conv, err := f.ensureConv(key)
	if err != nil {
		return rep, err
	}
	platform := map[string]bool{}
	for _, m := range conv.Messages {
		if m.PlatformID != "" {
			platform[m.PlatformID] = true
		}
	}
	var maxChunk int64
	for _, m := range c.Messages {
		if m.PlatformID == "" && slices.ContainsFunc(conv.Messages, func(o Message) bool {
			return o.PlatformID == "" && o.Role == m.Role && o.Time.UnixMilli() == m.Time.UnixMilli() && o.Text == m.Text
		}) {
			continue
		}
		if m.PlatformID == "" || !platform[m.PlatformID] {
			if m.PlatformID != "" {
				platform[m.PlatformID] = true
			}
			m.Key = pipeline.Key{}
			m.ID = f.NextMessageID
			f.NextMessageID++
			m.Time = ms(m.Time)
			m.Tokens = max(m.Tokens, 1)
			conv.Messages = append(conv.Messages, m)
			rep.Messages++
		}
		maxChunk = max(maxChunk, m.ChunkID)
	}
	existing := slices.Clone(conv.Summaries)
	idMap := map[int64]int64{}
	for _, sm := range c.Summaries {
		if id, ok := findSummary(existing, sm, idMap); ok {
			idMap[sm.ID] = id
			continue
		}
		ns := sm
		if ns.Level > 1 {
			ns.Sources = mapIDs(sm.Sources, idMap)
		}
		f.insertSummary(conv, &ns)
		idMap[sm.ID] = ns.ID
		existing = append(existing, ns)
		rep.Summaries++
		if ns.Level == 1 {
			for _, ch := range ns.Sources {
				maxChunk = max(maxChunk, ch)
			}
		}
	}
	f.setNextChunk(conv.Key, max(f.nextChunk(conv.Key), maxChunk+1))
	conv.TurnsSinceSummary = max(conv.TurnsSinceSummary, c.TurnsSinceSummary)
	if last := max(millisOrZero(conv.LastSummary), millisOrZero(c.LastSummary)); last > 0 {
		conv.LastSummary = fromMillis(last)
	} else {
		conv.LastSummary = time.Time{}
	}
	return rep, nil
}

// Owners implements Backend: every owner with a file, plus cached ones.
func (j *JSON) Owners(ctx context.Context) ([]string, error) {
	if err := j.check(ctx); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", j.dir, err)
	}
	set := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		j.mu.Lock()
		owner, ok := j.names[name]
		j.mu.Unlock()
		if !ok {
			var head struct {
				Format string `json:"format"`
				Data   struct {
					Owner string `json:"owner"`
				} `json:"data"`
			}
			b, err := os.ReadFile(filepath.Join(j.dir, name))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return nil, fmt.Errorf("listing owners: %w", err)
			}
			if json.Unmarshal(b, &head) != nil || head.Format != jsonFileFormat || JSONFileName(head.Data.Owner) != name {
				continue // not an owner file of ours
			}
			owner = head.Data.Owner
			j.mu.Lock()
			j.names[name] = owner
			j.mu.Unlock()
		}
		set[owner] = true
	}
	j.mu.Lock()
	cached := make(map[string]*jsonOwner, len(j.owners))
	maps.Copy(cached, j.owners)
	j.mu.Unlock()
	for owner, o := range cached {
		o.mu.RLock()
		if o.loaded && !o.f.Data.Empty() {
			set[owner] = true
		}
		o.mu.RUnlock()
	}
	out := slices.Collect(maps.Keys(set))
	sort.Strings(out)
	return out, nil
}
