package figures

import (
	"context"
	"path/filepath"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/config"
)

// PairResult holds the big conversation's turns on two rigs that differ in
// one setting (turnPair): Base as configured by default, Variant with the
// setting.
type PairResult struct {
	Base, Variant       []time.Duration // the chain, per turn
	BaseAsm, VariantAsm []time.Duration // its assembly
	BaseCPU, VariantCPU []time.Duration // process CPU time during each turn
	FirstVariant        time.Duration   // the variant's first turn (the first of the warm-up)
}

// turnPair runs the big conversation's turns of TurnOverhead on two rigs,
// each on its own copy of the fixture src, configured by configure[0] and
// configure[1] (nil: as by default); turns alternate between them, the same messages in the same
// order, so both see the same machine noise. ready, when set, sees the
// rigs before the first turn.
func turnPair(ctx context.Context, o TurnOptions, src string, configure [2]func(*rigConfig), ready func(base, variant *rig) error) (PairResult, error) {
	var res PairResult
	g := chattext.NewWords(11)
	var rigs [2]*rig
	var lat [2]*latencies
	for i := range rigs {
		dir, err := mkdirTemp(o.TempDir, "recall-turn-pair-")
		if err != nil {
			return res, err
		}
		defer removeAll(dir)
		if err := copyFile(src, filepath.Join(dir, "recall.db")); err != nil {
			return res, err
		}
		lat[i] = &latencies{}
		rc := rigConfig{
			dir: dir, bgSummary: true, allowed: []string{"telegram:" + turnUser},
			model:   &fakeModel{replies: g.Pool(64, 12, 80, turnPeople), summaries: g.Pool(16, 60, 110, turnPeople)},
			wrapAsm: func(a chat.Assembler) chat.Assembler { return &timedAssembler{Assembler: a, lat: lat[i]} },
		}
		if configure[i] != nil {
			configure[i](&rc)
		}
		r, err := newRig(ctx, rc)
		if err != nil {
			return res, err
		}
		defer r.close()
		rigs[i] = r
	}
	for _, r := range rigs {
		if err := r.waitSearchIndexes(ctx); err != nil {
			return res, err
		}
	}
	if ready != nil {
		if err := ready(rigs[0], rigs[1]); err != nil {
			return res, err
		}
	}
	drivers := [2]*convDriver{}
	for i := range drivers {
		drivers[i] = &convDriver{key: turnKey, user: turnUser, name: turnName, people: turnPeople, g: chattext.NewWords(21)}
	}
	for w := range o.Warmup {
		for i := range rigs {
			took, _, err := drivers[i].turn(ctx, rigs[i].handler)
			if err != nil {
				return res, err
			}
			if i == 1 && w == 0 {
				res.FirstVariant = took
			}
		}
	}
	for i := range lat {
		lat[i].reset()
	}
	for range o.Turns {
		t, c, err := drivers[0].turn(ctx, rigs[0].handler)
		if err != nil {
			return res, err
		}
		res.Base, res.BaseCPU = append(res.Base, t), append(res.BaseCPU, c)
		t, c, err = drivers[1].turn(ctx, rigs[1].handler)
		if err != nil {
			return res, err
		}
		res.Variant, res.VariantCPU = append(res.Variant, t), append(res.VariantCPU, c)
	}
	res.BaseAsm, res.VariantAsm = lat[0].of(turnKey), lat[1].of(turnKey)
	return res, nil
}

// TurnOverheadFeedback measures the turn of TurnOverhead with
// memory.feedback on beside the same turn with it off (turnPair), on
// copies of the turn fixture, whatever its default: Variant is the turn
// with feedback, Base without.
func TurnOverheadFeedback(ctx context.Context, o TurnOptions) (PairResult, error) {
	src, err := TurnFixture(ctx, o.Archived, o.Progress)
	if err != nil {
		return PairResult{}, err
	}
	feedback := func(on bool) func(*rigConfig) {
		return func(rc *rigConfig) { rc.configure = func(c *config.Config) { c.Memory.Feedback = on } }
	}
	return turnPair(ctx, o, src, [2]func(*rigConfig){feedback(false), feedback(true)}, nil)
}
