package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/ncruces/go-sqlite3"

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
const sqlAroundWindow = `SELECT ` + msgColumns + ` FROM messages m WHERE +m.conv = ?1 AND m.id IN (SELECT value FROM json_each(?2))`

// aroundWindow is how far each way of a hit AroundReach reads at most by
// id, in steps of reach: ids are shared by every conversation, so a window
// holds a conversation's neighbours only when few messages of others came
// between.
const aroundWindow = 2

// AroundReach answers Store.AroundReach in one read transaction. It reads
// messages by id, the ids within reach of each of ids first, then within
// aroundWindow×reach of the hits those did not answer: every id read is
// either a message of the conversation or not one, so walking from a hit
// over ids read, the first reach messages met each way are its nearest
// ones. Only the hits whose window does not hold them (a long run of
// other conversations' messages, the conversation's ends) are walked step
// by step (sqlAroundReach), the index seeks that cost ~1 ms a turn at 30
// hits when every hit took them. In a conversation written without others
// between, the first read answers every hit, reading the 2×reach+1 ids
// around each (and no more).
func (s *SQLite) AroundReach(ctx context.Context, key pipeline.Key, ids []int64, reach int) ([]Message, error) {
	if len(ids) == 0 || reach <= 0 {
		return nil, nil
	}
	var out []Message
	err := s.read(ctx, func(c *sqlite3.Conn, sc *searchConn) error {
		r := &searchRun{c: c, sc: sc, key: key} // runs the statements (each), no search
		defer r.close()
		found := false
		if err := r.each(sqlSearchConv, func(st *sqlite3.Stmt) bool {
			r.conv, found = st.ColumnInt64(0), true
			return true
		}, key.String()); err != nil || !found {
			return err
		}
		// Sized for a conversation written alone (the first read answers).
		n := len(ids) * (2*reach + 1)
		a := aroundRead{r: r, reach: reach, asked: make(map[int64]bool, n), got: make(map[int64]bool, n), msgs: make([]Message, 0, n)}
		var err error
		out, err = a.run(ids)
		if s.aroundTrace != nil {
			s.aroundTrace(a.reads)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading around messages of %s: %w", key, err)
	}
	return out, nil
}

// aroundRead is one AroundReach.
type aroundRead struct {
	r     *searchRun
	reach int
	seeds map[int64]bool // the ids asked around
	asked map[int64]bool // the ids read
	got   map[int64]bool // of those, the conversation's
	msgs  []Message      // the conversation's messages read, but seeds
	keep  map[int64]bool // the neighbours found
	reads [3]int         // statements run: by window of reach, by window of aroundWindow×reach, step by step
}

// run returns the messages around ids (see SQLite.AroundReach).
func (a *aroundRead) run(ids []int64) ([]Message, error) {
	a.keep = make(map[int64]bool, 2*a.reach*len(ids))
	// Without ids themselves (those of the conversation: the others have
	// no neighbours); the caller has them.
	a.seeds = make(map[int64]bool, len(ids))
	for _, id := range ids {
		a.seeds[id] = true
	}
	todo := ids
	for i, w := range []int64{int64(a.reach), int64(aroundWindow * a.reach)} {
		if err := a.readWindows(todo, w, i); err != nil {
			return nil, err
		}
		todo = a.unsure(todo)
		if len(todo) == 0 {
			break
		}
	}
	var far []Message
	if len(todo) > 0 {
		a.reads[2]++
		slices.Sort(todo)
		err := a.r.each(sqlAroundReach, func(st *sqlite3.Stmt) bool {
			far = append(far, stmtMessage(st, 0, a.r.key))
			return true
		}, a.r.conv, jsonIDs(todo), a.reach)
		if err != nil {
			return nil, err
		}
	}
	out := make([]Message, 0, len(a.keep)+len(far))
	for _, m := range a.msgs {
		if a.keep[m.ID] {
			out = append(out, m)
		}
	}
	for _, m := range far {
		if !a.seeds[m.ID] {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(x, y Message) int { return cmp.Compare(x.ID, y.ID) })
	return slices.CompactFunc(out, func(x, y Message) bool { return x.ID == y.ID }), nil
}

// readWindows reads the ids within w of each of hits not read yet.
func (a *aroundRead) readWindows(hits []int64, w int64, stage int) error {
	var want []int64
	for _, id := range hits {
		for d := -w; d <= w; d++ {
			if x := id + d; x > 0 && !a.asked[x] {
				a.asked[x] = true
				want = append(want, x)
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	a.reads[stage]++
	return a.r.each(sqlAroundWindow, func(st *sqlite3.Stmt) bool {
		id := st.ColumnInt64(0)
		a.got[id] = true
		if !a.seeds[id] {
			a.msgs = append(a.msgs, stmtMessage(st, 0, a.r.key))
		}
		return true
	}, a.r.conv, jsonIDs(want))
}

// unsure marks the neighbours of hits that the ids read show, and returns
// the hits (of the conversation) whose reach neighbours each way they do
// not.
func (a *aroundRead) unsure(hits []int64) []int64 {
	var out []int64
	for _, id := range hits {
		if !a.got[id] {
			continue // not the conversation's: no neighbours
		}
		if !a.walk(id, -1) || !a.walk(id, 1) {
			out = append(out, id)
		}
	}
	return out
}

// walk goes from id in direction dir over the ids read, keeping the
// conversation's messages it meets, until it has met reach of them (true)
// or meets an id not read (false).
func (a *aroundRead) walk(id, dir int64) bool {
	met := 0
	for x := id + dir; met < a.reach; x += dir {
		if !a.asked[x] {
			return false // (ids below 1 are never read)
		}
		if a.got[x] {
			a.keep[x] = true
			met++
		}
	}
	return true
}
