package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/recallbot/recall/pipeline"
)

// Reading the messages around search hits further than one step.

// aroundReacher is a backend that reads the messages up to reach steps
// around ids in one query (SQLite).
type aroundReacher interface {
	AroundReach(ctx context.Context, key pipeline.Key, ids []int64, reach int) ([]Message, error)
}

// AroundReach returns the messages up to reach before and after each of
// ids in the conversation (by id, archived or active), without ids
// themselves (the caller has them: search hits): each message once, oldest
// first. A backend that cannot in one read is asked step by step (Around),
// from the messages the last step added.
func (s *Store) AroundReach(ctx context.Context, key pipeline.Key, ids []int64, reach int) ([]Message, error) {
	if len(ids) == 0 || reach <= 0 {
		return nil, nil
	}
	return aroundReach(ctx, s.backendFor(key.Owner()), key, ids, reach)
}

// aroundReach answers AroundReach from b: in one read when it can.
func aroundReach(ctx context.Context, b Backend, key pipeline.Key, ids []int64, reach int) ([]Message, error) {
	if len(ids) == 0 || reach <= 0 {
		return nil, nil
	}
	if r, ok := b.(aroundReacher); ok {
		return r.AroundReach(ctx, key, ids, reach)
	}
	return aroundSteps(ctx, b, key, ids, reach)
}

// aroundSteps answers AroundReach from b with one Around a step.
func aroundSteps(ctx context.Context, b Backend, key pipeline.Key, ids []int64, reach int) ([]Message, error) {
	return AroundSteps(ctx, b.Around, key, ids, reach)
}

// AroundSteps answers AroundReach with around (one step around ids, as
// Store.Around), each step from the messages the last one added: the
// messages up to reach steps around ids, without ids, each once, oldest
// first. For a source that has no AroundReach of its own.
func AroundSteps(ctx context.Context, around func(context.Context, pipeline.Key, []int64) ([]Message, error), key pipeline.Key, ids []int64, reach int) ([]Message, error) {
	asked := make(map[int64]bool, len(ids))
	seeds := make(map[int64]bool, len(ids))
	for _, id := range ids {
		asked[id], seeds[id] = true, true
	}
	msgs, err := around(ctx, key, ids)
	for step := 1; step < reach && err == nil; step++ {
		var further []int64
		for _, m := range msgs {
			if !asked[m.ID] {
				asked[m.ID] = true
				further = append(further, m.ID)
			}
		}
		if len(further) == 0 {
			break
		}
		var next []Message
		if next, err = around(ctx, key, further); err == nil {
			msgs = append(msgs, next...)
		}
	}
	if err != nil {
		return nil, err
	}
	msgs = slices.DeleteFunc(msgs, func(m Message) bool { return seeds[m.ID] })
	slices.SortFunc(msgs, func(x, y Message) int { return cmp.Compare(x.ID, y.ID) })
	return slices.CompactFunc(msgs, func(x, y Message) bool { return x.ID == y.ID }), nil
}

// sqlAroundReach is sqlAround reaching ?3 steps each way (the neighbours'
// neighbours, and so on) without the messages ?2 themselves, in one query
// that reads each message once.
const sqlAroundReach = `WITH RECURSIVE seed(id) AS MATERIALIZED (SELECT id FROM messages WHERE +conv = ?1 AND id IN (SELECT value FROM json_each(?2))),
back(id, d) AS (SELECT id, 0 FROM seed
	UNION SELECT max(coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 0 AND id < j.id ORDER BY id DESC LIMIT 1), -1),
	                 coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 1 AND id < j.id ORDER BY id DESC LIMIT 1), -1)), j.d + 1
	FROM back j WHERE j.d < ?3 AND j.id >= 0),
fwd(id, d) AS (SELECT id, 0 FROM seed
	UNION SELECT min(coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 0 AND id > j.id ORDER BY id LIMIT 1), 9223372036854775807),
	                 coalesce((SELECT id FROM messages WHERE conv = ?1 AND is_active = 1 AND id > j.id ORDER BY id LIMIT 1), 9223372036854775807)), j.d + 1
	FROM fwd j WHERE j.d < ?3 AND j.id < 9223372036854775807)
SELECT ` + msgColumns + ` FROM messages m WHERE +m.conv = ?1 AND m.id IN (SELECT id FROM back UNION SELECT id FROM fwd EXCEPT SELECT id FROM seed) ORDER BY m.id`

// sqlAroundWindow reads the messages of conversation ?1 among the ids ?2.
const sqlAroundWindow = `SELECT ` + msgColumns + ` FROM messages m WHERE +m.conv = ?1 AND m.id IN (SELECT value FROM json_each(?2)) ORDER BY m.id`

// aroundWindow is how far each way of a hit AroundReach first reads, in
// ids, per step of reach: ids are shared by every conversation, so a
// window holds a conversation's neighbours only when few messages of
// others came between.
const aroundWindow = 2

// AroundReach answers Store.AroundReach, first from the rows whose ids lie
// within aroundWindow×reach of each of ids: read by id, they are every
// message of the conversation in that window, so when a window holds reach
// of them before (after) its hit, those are the hit's nearest ones. Only
// the hits whose window does not are walked step by step (sqlAroundReach),
// the index seeks that cost ~1 ms a turn at 30 hits when every hit took
// them.
func (s *SQLite) AroundReach(ctx context.Context, key pipeline.Key, ids []int64, reach int) ([]Message, error) {
	if len(ids) == 0 || reach <= 0 {
		return nil, nil
	}
	conv, err := convID(ctx, s.rd, key)
	if err != nil || conv == 0 {
		return nil, err
	}
	w := int64(aroundWindow * reach)
	window := make([]int64, 0, len(ids)*int(2*w+1))
	for _, id := range ids {
		for d := -w; d <= w; d++ {
			if id+d > 0 {
				window = append(window, id+d)
			}
		}
	}
	slices.Sort(window)
	window = slices.Compact(window)
	rows, err := s.rd.QueryContext(ctx, sqlAroundWindow, conv, jsonIDs(window))
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	got, _, err := scanMessages(rows, key, false) // oldest first
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	at := func(id int64) (int, bool) {
		return slices.BinarySearchFunc(got, id, func(m Message, id int64) int { return cmp.Compare(m.ID, id) })
	}
	seeds := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if _, ok := at(id); ok {
			seeds[id] = true // in the conversation
		}
	}
	keep := make([]bool, len(got))
	var unsure []int64
	for id := range seeds {
		i, _ := at(id)
		before, after := 0, 0
		for j := i - 1; j >= 0 && got[j].ID >= id-w && before < reach; j-- {
			keep[j] = true
			before++
		}
		for j := i + 1; j < len(got) && got[j].ID <= id+w && after < reach; j++ {
			keep[j] = true
			after++
		}
		if before < reach || after < reach {
			unsure = append(unsure, id)
		}
	}
	out := make([]Message, 0, len(got))
	for i, m := range got {
		if keep[i] && !seeds[m.ID] {
			out = append(out, m)
		}
	}
	if len(unsure) == 0 {
		return out, nil
	}
	slices.Sort(unsure)
	rows, err = s.rd.QueryContext(ctx, sqlAroundReach, conv, jsonIDs(unsure), reach)
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	far, _, err := scanMessages(rows, key, false)
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	for _, m := range far {
		if !seeds[m.ID] {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(x, y Message) int { return cmp.Compare(x.ID, y.ID) })
	return slices.CompactFunc(out, func(x, y Message) bool { return x.ID == y.ID }), nil
}
