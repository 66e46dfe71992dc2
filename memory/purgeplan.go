package memory

import (
	"time"
)

// purgePlan decides what happens to summaries when messages are purged. A
// summary whose time range reaches into the purged period carries purged text,
// so it is deleted, and so is every summary built from it. What such a deleted
// summary was built from but is itself clean comes back into play: surviving
// messages of its chunks become active again (to be summarized anew), clean
// source summaries become active again. Nothing that survives the purge drops
// out of the context.
type purgePlan struct {
	deleteSummaries     []int64
	reactivateSummaries []int64
	reactivateChunks    []int64
}

// planPurge computes the plan for one conversation's summaries. all means the
// whole conversation goes; otherwise messages older than cutoff go.
func planPurge(sums []Summary, all bool, cutoff time.Time) purgePlan {
	var p purgePlan
	if all {
		for _, s := range sums {
			p.deleteSummaries = append(p.deleteSummaries, s.ID)
		}
		return p
	}
	doomed := map[int64]bool{}
	for _, s := range sums {
		if s.From.Before(cutoff) {
			doomed[s.ID] = true
		}
	}
	return planDoomed(sums, doomed)
}

// planPurgeChunks computes the plan when messages of the given chunks are
// purged (one sender's messages): the level-1 summaries of those chunks
// carry purged text.
func planPurgeChunks(sums []Summary, chunks map[int64]bool) purgePlan {
	doomed := map[int64]bool{}
	for _, s := range sums {
		if s.Level != 1 {
			continue
		}
		for _, src := range s.Sources {
			if chunks[src] {
				doomed[s.ID] = true
			}
		}
	}
	return planDoomed(sums, doomed)
}

// planDoomed completes a plan from the summaries that carry purged text.
func planDoomed(sums []Summary, doomed map[int64]bool) purgePlan {
	var p purgePlan
	// Upward closure: a summary built from a doomed summary is doomed. Ids
	// grow with creation, so one pass in id order suffices; loop to be safe.
	for changed := true; changed; {
		changed = false
		for _, s := range sums {
			if doomed[s.ID] || s.Level == 1 {
				continue
			}
			for _, src := range s.Sources {
				if doomed[src] {
					doomed[s.ID] = true
					changed = true
					break
				}
			}
		}
	}
	for _, s := range sums {
		if !doomed[s.ID] {
			continue
		}
		p.deleteSummaries = append(p.deleteSummaries, s.ID)
		for _, src := range s.Sources {
			if s.Level == 1 {
				p.reactivateChunks = append(p.reactivateChunks, src)
			} else if !doomed[src] {
				p.reactivateSummaries = append(p.reactivateSummaries, src)
			}
		}
	}
	return p
}

// planChunks is planPurgeChunks for a list of chunks (0: not summarized,
// ignored).
func planChunks(sums []Summary, chunks []int64) purgePlan {
	set := map[int64]bool{}
	for _, c := range chunks {
		if c != 0 {
			set[c] = true
		}
	}
	return planPurgeChunks(sums, set)
}

// applyTo carries the plan out on one JSON conversation's messages (those
// left after the purge) and summaries: the doomed summaries go, the ones to
// reactivate come back, and the messages of the chunks to reactivate become
// active again. It returns them, and how many summaries went.
func (p purgePlan) applyTo(msgs []Message, sums []Summary) ([]Message, []Summary, int64) {
	doomed, back, chunks := idSet(p.deleteSummaries), idSet(p.reactivateSummaries), idSet(p.reactivateChunks)
	var kept []Summary
	var gone int64
	for _, s := range sums {
		if doomed[s.ID] {
			gone++
			continue
		}
		if back[s.ID] {
			s.Active = true
		}
		kept = append(kept, s)
	}
	for i := range msgs {
		if chunks[msgs[i].ChunkID] {
			msgs[i].Active, msgs[i].ChunkID = true, 0
		}
	}
	return msgs, kept, gone
}
