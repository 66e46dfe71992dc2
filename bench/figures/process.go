package figures

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/llm/llmtest"
)

// ResidentOptions sizes ResidentMemory.
type ResidentOptions struct {
	Convs, Turns int           // the load: users × messages, each sent when the previous one is answered
	Delay        time.Duration // the fake LLM's answer time
	Concurrency  int           // llm.concurrency of the bot; 0: the default
	Settle       time.Duration // wait after ready before the idle reading
	// Quiet, when set, is a wait after the load before one more reading
	// (ResidentResult.Quiet): what the bot keeps once quiet again.
	Quiet time.Duration
	Model string   // llm.model; "": gpt-4o-mini (exact token counts)
	Env   []string // more of the bot's environment (KEY=value), e.g. GOGC
	// Profiles, when set, is a folder that gets the bot's heap and
	// goroutine profiles idle and after the load (idle-heap.pprof,
	// loaded-heap.pprof, …); bin must be built with the pprof tag.
	Profiles string
}

// ResidentResult is the bot's memory idle and after the load.
type ResidentResult struct {
	Idle, Loaded ProcMemory
	Quiet        ProcMemory // ResidentOptions.Quiet after the load; zero without it
	// PeakAnon and PeakPss are the most anonymous memory and PSS read
	// during the load, every peakEvery (the kernel keeps the peak of VmRSS
	// alone: Loaded.Peak); a spike between two readings is missed.
	PeakAnon, PeakPss int64
	Wall              time.Duration // of the load
	Turns             int
	Others            int // bot messages that answered no user message
}

// ResidentMemory runs the real bot (bin, built by BuildBot) in Telegram mode
// on a fresh data folder against a fake Bot API and a fake LLM answering
// after o.Delay, reads its resident memory once ready and idle, then after
// o.Convs users each had o.Turns messages answered.
func ResidentMemory(ctx context.Context, bin string, o ResidentOptions) (ResidentResult, error) {
	var res ResidentResult
	data, err := os.MkdirTemp("", "recall-rss-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(data)
	g := chattext.NewWords(51)
	replies := g.Pool(64, 12, 80, nil)
	srv := llmtest.Start(func(req llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: replies[len(req.Messages)%len(replies)], Delay: o.Delay}
	})
	defer srv.Close()
	tg := StartFakeTelegram()
	defer tg.Close()
	env := BotEnv{Data: data, Telegram: tg, LLM: srv.URL, Concurrency: o.Concurrency}
	if o.Profiles != "" {
		if env.Pprof, err = freeAddr(); err != nil {
			return res, err
		}
	}
	env.Extra = append(env.Extra, o.Env...)
	if o.Model != "" {
		env.Extra = append(env.Extra, "RECALL_LLM_MODEL="+o.Model)
	}
	bot, err := StartBot(bin, env)
	if err != nil {
		return res, err
	}
	defer bot.Stop()
	if _, err := bot.WaitReady(ctx, time.Minute); err != nil {
		return res, err
	}
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if res.Idle, err = bot.Memory(); err != nil {
		return res, err
	}
	if err := profiles(bot, o.Profiles, "idle"); err != nil {
		return res, err
	}
	names := chattext.WordsNames()
	ids := make([]int64, o.Convs)
	texts := make([][]string, o.Convs)
	for c := range ids {
		ids[c] = int64(800000 + c)
		texts[c] = make([]string, o.Turns)
		for t := range texts[c] {
			texts[c][t] = g.Text(g.Between(3, 30), names[c%len(names):c%len(names)+1])
		}
	}
	start := time.Now()
	done := tg.Converse(ids, texts)
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	peaks := samplePeaks(sctx, bot.Pid(), done)
	select {
	case <-done:
	case <-time.After(30 * time.Minute):
		return res, fmt.Errorf("the load did not finish within 30 minutes:\n%s", bot.Log())
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.Wall = time.Since(start)
	peak := <-peaks
	res.Turns = o.Convs * o.Turns
	res.Others = tg.Others()
	if res.Loaded, err = bot.Memory(); err != nil {
		return res, err
	}
	res.PeakAnon = max(peak.Anon, res.Loaded.Anon, res.Idle.Anon)
	res.PeakPss = max(peak.Pss, res.Loaded.Pss, res.Idle.Pss)
	if err := profiles(bot, o.Profiles, "loaded"); err != nil {
		return res, err
	}
	if o.Quiet > 0 {
		select {
		case <-time.After(o.Quiet):
		case <-ctx.Done():
			return res, ctx.Err()
		}
		if res.Quiet, err = bot.Memory(); err != nil {
			return res, err
		}
	}
	return res, bot.Stop()
}

// peakEvery is how often samplePeaks reads the bot's memory.
const peakEvery = 100 * time.Millisecond

// samplePeaks reads process pid's memory every peakEvery until done is
// closed, then sends the most anonymous memory and PSS it read (zero when
// no reading succeeded) and closes the channel; it closes it at once when
// ctx ends.
func samplePeaks(ctx context.Context, pid int, done <-chan struct{}) <-chan ProcMemory {
	out := make(chan ProcMemory, 1)
	go func() {
		defer close(out)
		var peak ProcMemory
		tick := time.NewTicker(peakEvery)
		defer tick.Stop()
		for {
			if m, err := procMemory(pid); err == nil {
				peak.Anon, peak.Pss = max(peak.Anon, m.Anon), max(peak.Pss, m.Pss)
			}
			select {
			case <-done:
				out <- peak
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// profiles writes bot's heap and goroutine profiles into dir as
// <when>-heap.pprof and <when>-goroutine.pprof, and its memory map with the
// resident size of each mapping as <when>-smaps.txt (from /proc); nothing
// when dir is "". The memory figures are read before, as a heap profile's
// GC changes them.
func profiles(bot *Bot, dir, when string) error {
	if dir == "" {
		return nil
	}
	smaps, err := os.ReadFile("/proc/" + strconv.Itoa(bot.cmd.Process.Pid) + "/smaps")
	if err != nil {
		return fmt.Errorf("the memory map is read from /proc (Linux): %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, when+"-smaps.txt"), smaps, 0o644); err != nil {
		return err
	}
	for _, name := range []string{"heap", "goroutine"} {
		if err := bot.Profile(name, filepath.Join(dir, when+"-"+name+".pprof")); err != nil {
			return err
		}
	}
	return nil
}

// Startup starts the real bot (bin) runs times on the data folder data (a
// recall.db in it, or none) and returns, for each start, the time from exec
// to the first /healthz answering ok with Telegram connected, and the
// resident memory then.
func Startup(ctx context.Context, bin, data string, runs int) ([]time.Duration, []ProcMemory, error) {
	srv := llmtest.Start(llmtest.Echo("echo: "))
	defer srv.Close()
	var took []time.Duration
	var mem []ProcMemory
	for i := 0; i < runs; i++ {
		tg := StartFakeTelegram()
		bot, err := StartBot(bin, BotEnv{Data: data, Telegram: tg, LLM: srv.URL})
		if err != nil {
			tg.Close()
			return took, mem, err
		}
		ready, err := bot.WaitReady(ctx, 5*time.Minute)
		if err == nil {
			took = append(took, ready.Sub(bot.Started))
			var m ProcMemory
			m, err = bot.Memory()
			mem = append(mem, m)
		}
		if serr := bot.Stop(); err == nil && serr != nil {
			err = fmt.Errorf("stopping the bot: %w", serr)
		}
		tg.Close()
		if err != nil {
			return took, mem, fmt.Errorf("start %s: %w", strconv.Itoa(i+1), err)
		}
	}
	return took, mem, nil
}

// DatabaseSize is the size of data/recall.db with its WAL, in bytes.
func DatabaseSize(data string) int64 {
	var n int64
	for _, s := range []string{"", "-wal"} {
		if fi, err := os.Stat(data + "/recall.db" + s); err == nil {
			n += fi.Size()
		}
	}
	return n
}
