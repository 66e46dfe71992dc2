package figures

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// convDriver plays the user of one conversation, one turn at a time.
type convDriver struct {
	key    pipeline.Key
	user   string
	name   string
	people []string
	g      *chattext.Words
	n      int
	out    countingSender
}

// turn sends one user message of 3–30 words through h and returns how long
// the chain took, and the CPU time the process used meanwhile (background
// work included). The reply must be exactly one non-error message.
func (d *convDriver) turn(ctx context.Context, h pipeline.Handler) (took, cpu time.Duration, err error) {
	d.n++
	in := pipeline.Inbound{
		Key: d.key, SenderID: d.user, SenderName: d.name, MessageID: "bench-" + strconv.Itoa(d.n),
		Text: d.g.Text(d.g.Between(3, 30), d.people), Time: time.Now(),
	}
	before, _ := d.out.state()
	cpu0, start := ProcessCPU(), time.Now()
	err = h.Handle(ctx, &pipeline.Turn{In: in, Out: &d.out})
	took, cpu = time.Since(start), ProcessCPU()-cpu0
	if err != nil {
		return took, cpu, fmt.Errorf("turn %d of %s: %w", d.n, d.key, err)
	}
	if n, last := d.out.state(); n != before+1 || last.Plain || last.ReplyTo != in.MessageID {
		return took, cpu, fmt.Errorf("turn %d of %s: %d messages sent, last %+v; want one reply", d.n, d.key, n-before, last)
	}
	return took, cpu, nil
}

// TurnOptions sizes TurnOverhead.
type TurnOptions struct {
	Archived int       // archived messages of the big conversation (TurnFixture); 100,000 in the figure
	Turns    int       // turns measured per conversation; 300 in the figure
	Warmup   int       // turns per conversation before the clock starts
	TempDir  string    // where the fixture is copied; os.TempDir() when ""
	Progress io.Writer // hears about a fixture build; nil: nothing
}

// TurnResult holds every measured turn, per conversation.
type TurnResult struct {
	Big, Fresh       []time.Duration // the chain, per turn
	BigCPU, FreshCPU []time.Duration // process CPU time during each turn
	Asm, Store       []time.Duration // the big conversation's assembly and durable reply write
	SummaryCalls     int64
	IndexReady       time.Duration // waited for the big conversation's index in memory
}

// TurnOverhead measures everything in a turn except the LLM call and the
// transport: access, dedupe (a store lookup), commands, settings, queueing
// the user message, assembly (summaries, recent turns, snippet search over
// the archive, token counting), storing the reply durably, the summary
// trigger — with the summaries themselves running in the background as wired
// (threshold 10, instant fake model). Turns alternate between the big
// conversation of a copy of the turn fixture (o.Archived archived messages,
// 10 active level-1 summaries, ~30 active messages) and a fresh conversation
// of the same store (0 messages at the start): the fresh one is the
// baseline, seeing the same machine noise.
func TurnOverhead(ctx context.Context, o TurnOptions) (TurnResult, error) {
	var res TurnResult
	src, err := TurnFixture(ctx, o.Archived, o.Progress)
	if err != nil {
		return res, err
	}
	dir, err := mkdirTemp(o.TempDir, "recall-turn-")
	if err != nil {
		return res, err
	}
	defer removeAll(dir)
	if err := copyFile(src, filepath.Join(dir, "recall.db")); err != nil {
		return res, err
	}
	g := chattext.NewWords(11)
	fake := &fakeModel{replies: g.Pool(64, 12, 80, turnPeople), summaries: g.Pool(16, 60, 110, turnPeople)}
	asmLat, storeLat := &latencies{}, &latencies{}
	freshKey := pipeline.Key{Channel: "telegram", Chat: "434343"}
	r, err := newRig(ctx, rigConfig{
		dir: dir, model: fake, bgSummary: true,
		allowed:   []string{"telegram:" + turnUser, "telegram:434343"},
		wrapAsm:   func(a chat.Assembler) chat.Assembler { return &timedAssembler{Assembler: a, lat: asmLat} },
		wrapStore: func(s *memory.Store) chat.Store { return &timedStore{Store: s, lat: storeLat} },
	})
	if err != nil {
		return res, err
	}
	defer r.close()
	st, err := r.store.Status(ctx, turnKey)
	if err != nil {
		return res, err
	}
	if st.Archived != int64(o.Archived) {
		return res, fmt.Errorf("fixture conversation has %d archived messages, want %d", st.Archived, o.Archived)
	}
	// The big conversation's index in memory, built in the background from
	// the start (memory/search_full.go): the figure is the turn once it is.
	t0 := time.Now()
	if err := r.waitSearchIndexes(ctx); err != nil {
		return res, err
	}
	res.IndexReady = time.Since(t0)
	big := &convDriver{key: turnKey, user: turnUser, name: turnName, people: turnPeople, g: chattext.NewWords(21)}
	fresh := &convDriver{key: freshKey, user: "434343", name: "Marta", people: []string{"Marta", "Nuno"}, g: chattext.NewWords(22)}
	for range o.Warmup {
		if _, _, err := big.turn(ctx, r.handler); err != nil {
			return res, err
		}
		if _, _, err := fresh.turn(ctx, r.handler); err != nil {
			return res, err
		}
	}
	asmLat.reset()
	storeLat.reset()
	sums0 := fake.sums.Load()
	for range o.Turns {
		t, c, err := big.turn(ctx, r.handler)
		if err != nil {
			return res, err
		}
		res.Big, res.BigCPU = append(res.Big, t), append(res.BigCPU, c)
		if t, c, err = fresh.turn(ctx, r.handler); err != nil {
			return res, err
		}
		res.Fresh, res.FreshCPU = append(res.Fresh, t), append(res.FreshCPU, c)
	}
	res.Asm, res.Store = asmLat.of(turnKey), storeLat.of(turnKey)
	res.SummaryCalls = fake.sums.Load() - sums0
	return res, nil
}
