package figures

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// ConcurrentOptions sizes Concurrent.
type ConcurrentOptions struct {
	Convs, Turns int           // 1,000 × 10 in the figure
	Concurrency  int           // C: LLM calls in flight (llm Options.Concurrency)
	Idle         int           // the transport's MaxIdleConnsPerHost; 0: C
	Delay        time.Duration // the fake LLM's answer time; 200 ms in the figure
	TempDir      string        // where the store goes; os.TempDir() when ""
	HeapProfile  io.Writer     // when set, gets a heap profile after the load, before the store closes
}

// LLMDefaultIdle is the MaxIdleConnsPerHost llm gives the transport it makes
// when Options.HTTPClient is nil.
const LLMDefaultIdle = 32

// ConcurrentResult is one run of Concurrent.
type ConcurrentResult struct {
	Wall         time.Duration
	CPU          time.Duration // the whole process, fake server included
	Throughput   float64       // turns per second
	Ideal        float64       // C / delay
	LLMCalls     int64
	SummaryCalls int64
	NewConns     int64 // dials of the LLM client
	Notices      int   // messages that answer no user message (the storage warning)
	LogWarnings  int
	Warnings     string // the first ones
}

// recorder is the Sender of every conversation: it keeps what was sent, per
// conversation, in order.
type recorder struct {
	mu  sync.Mutex
	got map[pipeline.Key][]pipeline.Outbound
}

func (r *recorder) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	r.mu.Lock()
	r.got[out.Key] = append(r.got[out.Key], out)
	r.mu.Unlock()
	return "", nil
}

// turnID names turn t of conversation c; the user message ends with it in
// brackets and the fake server starts its answer with it.
func turnID(c, t int) string { return "c" + strconv.Itoa(c) + "-t" + strconv.Itoa(t) }

// Concurrent runs o.Convs conversations × o.Turns turns through the
// pipeline.Dispatcher and the whole chain, against the real llm.Client and
// an llmtest server that answers every request after o.Delay. With C LLM
// calls in flight (the dispatcher gets 2C slots so the LLM limit is the
// bottleneck) the best possible throughput is ideal = C / delay.
//
// The summary threshold is 500, so no summary is due within a few turns and
// the figure measures chat turns only. Every conversation's replies must
// arrive in submission order, each turn answered exactly once by the model:
// anything else is an error.
func Concurrent(ctx context.Context, o ConcurrentOptions) (ConcurrentResult, error) {
	var res ConcurrentResult
	if o.Idle == 0 {
		o.Idle = o.Concurrency
	}
	g := chattext.NewWords(31)
	replies := g.Pool(64, 12, 80, nil)
	var calls, sumCalls atomic.Int64
	srv := llmtest.Start(func(req llmtest.Request) llmtest.Response {
		n := calls.Add(1)
		if len(req.Messages) > 0 && (req.Messages[0].Content == summary.Instructions || req.Messages[0].Content == summary.FoldInstructions) {
			sumCalls.Add(1)
			return llmtest.Response{Text: replies[0], Delay: o.Delay}
		}
		id := ""
		if len(req.Messages) > 0 {
			last := req.Messages[len(req.Messages)-1].Content
			if i := strings.LastIndexByte(last, '['); i >= 0 {
				id = strings.TrimSuffix(last[i:], "]") + "]"
			}
		}
		return llmtest.Response{Text: id + " " + replies[int(n)%len(replies)], Delay: o.Delay}
	})
	defer srv.Close()
	var dials atomic.Int64
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = max(tr.MaxIdleConns, 2*o.Concurrency)
	tr.MaxIdleConnsPerHost = o.Idle
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	defer tr.CloseIdleConnections()
	cfgLLM := config.Default().LLM
	client := llm.New(llm.Options{
		BaseURL: srv.URL, Model: cfgLLM.Model, Temperature: cfgLLM.Temperature, MaxTokens: cfgLLM.MaxTokens,
		Timeout: cfgLLM.Timeout, MaxRetries: cfgLLM.MaxRetries, Concurrency: o.Concurrency, HTTPClient: &http.Client{Transport: tr},
	})

	// The conversations and their messages, made before the clock starts.
	names := chattext.WordsNames()
	keys := make([]pipeline.Key, o.Convs)
	allowed := make([]string, o.Convs)
	texts := make([][]string, o.Convs)
	for c := range o.Convs {
		id := strconv.Itoa(700000 + c)
		keys[c] = pipeline.Key{Channel: "telegram", Chat: id}
		allowed[c] = "telegram:" + id
		person := []string{names[c%len(names)]}
		texts[c] = make([]string, o.Turns)
		for t := range o.Turns {
			texts[c][t] = g.Text(g.Between(3, 30), person) + " [" + turnID(c, t) + "]"
		}
	}
	dir, err := mkdirTemp(o.TempDir, "recall-concurrent-")
	if err != nil {
		return res, err
	}
	defer removeAll(dir)
	warns := &warnings{}
	r, err := newRig(ctx, rigConfig{dir: dir, model: client, threshold: 500, bgSummary: true, allowed: allowed, log: warns.logger()})
	if err != nil {
		return res, err
	}
	d := pipeline.NewDispatcher(r.handler, 2*o.Concurrency, warns.logger())
	rec := &recorder{got: make(map[pipeline.Key][]pipeline.Outbound, o.Convs)}
	cpu0, start := ProcessCPU(), time.Now()
	for t := range o.Turns {
		for c := range o.Convs {
			in := pipeline.Inbound{
				Key: keys[c], SenderID: keys[c].Chat, SenderName: names[c%len(names)],
				MessageID: turnID(c, t), Text: texts[c][t], Time: time.Now(),
			}
			if err := d.Submit(in, rec); err != nil {
				return res, errors.Join(err, r.close())
			}
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	err = d.Shutdown(sctx)
	cancel()
	res.Wall, res.CPU = time.Since(start), ProcessCPU()-cpu0
	if o.HeapProfile != nil && err == nil {
		runtime.GC()
		err = pprof.WriteHeapProfile(o.HeapProfile)
	}
	if cerr := r.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("%w; %s", err, warns)
	}
	// Every conversation: its replies, each once, in order. Notices that
	// answer no message (the storage warning) are counted apart.
	for c := range o.Convs {
		var got []pipeline.Outbound
		for _, out := range rec.got[keys[c]] {
			if out.ReplyTo == "" {
				res.Notices++
				continue
			}
			got = append(got, out)
		}
		ok := len(got) == o.Turns
		for t := 0; ok && t < o.Turns; t++ {
			id := turnID(c, t)
			ok = got[t].ReplyTo == id && !got[t].Plain && strings.HasPrefix(got[t].Text, "["+id+"] ")
		}
		if !ok {
			var seen []string
			for _, out := range got {
				seen = append(seen, fmt.Sprintf("%s:%.30q", out.ReplyTo, out.Text))
			}
			return res, fmt.Errorf("conversation %d: got %d messages %v; want the replies to %s…%s, once each, in order; %s", c, len(got), seen, turnID(c, 0), turnID(c, o.Turns-1), warns)
		}
	}
	if n := len(rec.got); n != o.Convs {
		return res, fmt.Errorf("replies went to %d conversations, want %d", n, o.Convs)
	}
	res.Throughput = float64(o.Convs*o.Turns) / res.Wall.Seconds()
	res.Ideal = float64(o.Concurrency) / o.Delay.Seconds()
	res.LLMCalls, res.SummaryCalls, res.NewConns = calls.Load(), sumCalls.Load(), dials.Load()
	res.LogWarnings = warns.count()
	if res.LogWarnings > 0 {
		res.Warnings = warns.String()
	}
	return res, nil
}
