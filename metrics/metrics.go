package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
)

// WriteQueue is where the write-behind queue's state is read at each scrape
// (*memory.Store).
type WriteQueue interface {
	WriteStats() memory.WriteStats
}

// Options configure New. Every field may be left zero.
type Options struct {
	// Version is reported as recall_build_info{version}.
	Version string
	// Channels are the enabled chat channels; their per-channel series
	// start at 0, so rates work from the first scrape.
	Channels []string
	// WriteQueue, when set, is read at each scrape for
	// recall_write_queue_depth, recall_write_queue_failing and
	// recall_write_failures_total.
	WriteQueue WriteQueue
	// Replica, when set (several replicas on one PostgreSQL database),
	// labels every series replica="<name>", so one Prometheus scraping
	// them all tells them apart.
	Replica string
}

// Metrics holds Recall's counters and the latency histogram. Its methods are
// safe for concurrent use.
type Metrics struct {
	opts       Options
	turns      *counterVec
	latency    *histogram
	tokens     *counterVec
	summaries  *counterVec
	reconnects *counterVec
	toolCalls  *counterVec
}

// Outcomes of a turn that called the language model and got an answer; only
// these are timed by recall_llm_latency_seconds.
const (
	outcomeOK        = "ok"
	outcomeSendError = "send_error"
)

// New returns the metrics; the Go runtime's and the process's own are read
// at each scrape.
func New(opts Options) *Metrics {
	m := &Metrics{
		opts: opts,
		turns: newCounterVec("recall_turns_total",
			"Chat turns answered, by channel and outcome (ok, llm_error, storage, send_error, not_configured).",
			"channel", "outcome"),
		latency: newHistogram("recall_llm_latency_seconds",
			"Time from a message's arrival at the responder to the language model's answer being ready to send, for turns the model answered.",
			[]float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120}),
		tokens: newCounterVec("recall_llm_tokens_total",
			"Tokens used by chat replies as reported by the LLM server, by model and kind (prompt, completion).",
			"model", "kind"),
		summaries: newCounterVec("recall_summaries_created_total",
			"Summaries created, by level (1 = from messages, higher = folded summaries).",
			"level"),
		reconnects: newCounterVec("recall_channel_reconnects_total",
			"Times a chat channel reconnected after losing its connection.",
			"channel"),
		toolCalls: newCounterVec("recall_tool_calls_total",
			"Memory tool calls the model made, by tool and outcome (ok, error: refused or failed and told to the model, unknown: no such tool).",
			"tool", "outcome"),
	}
	for _, ch := range opts.Channels {
		m.reconnects.add(0, ch)
		m.turns.add(0, ch, outcomeOK)
	}
	return m
}

// Turn records a finished turn (chat.Observer): its outcome, and for turns
// the model answered the latency and the tokens it reported.
func (m *Metrics) Turn(channel, outcome string, latency time.Duration, reply llm.Reply) {
	m.turns.add(1, channel, outcome)
	if outcome != outcomeOK && outcome != outcomeSendError {
		return
	}
	m.latency.observe(latency.Seconds())
	model := reply.Model
	if model == "" {
		model = "unknown"
	}
	if reply.PromptTokens > 0 {
		m.tokens.add(float64(reply.PromptTokens), model, "prompt")
	}
	if reply.CompletionTokens > 0 {
		m.tokens.add(float64(reply.CompletionTokens), model, "completion")
	}
}

// SummaryCreated counts one summary of the given level.
func (m *Metrics) SummaryCreated(level int) {
	m.summaries.add(1, strconv.Itoa(level))
}

// ToolCall counts one memory tool call (memtools.Observer).
func (m *Metrics) ToolCall(tool, outcome string) {
	m.toolCalls.add(1, tool, outcome)
}

// ChannelReconnected counts one reconnect of a chat channel ("telegram",
// "whatsapp").
func (m *Metrics) ChannelReconnected(channel string) {
	m.reconnects.add(1, channel)
}

// Handler serves the metrics in the Prometheus text format (version 0.0.4).
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(m.exposition())
	})
}

// exposition writes every family, sorted by name as Prometheus' own client
// does.
func (m *Metrics) exposition() []byte {
	e := &expo{replica: m.opts.Replica}
	m.turns.write(e)
	m.latency.write(e)
	m.tokens.write(e)
	m.summaries.write(e)
	m.reconnects.write(e)
	m.toolCalls.write(e)
	e.family("recall_build_info", "Always 1; the version label is the running build.", "gauge")
	e.sample("recall_build_info", []string{"version"}, []string{m.opts.Version}, 1)
	if q := m.opts.WriteQueue; q != nil {
		st := q.WriteStats()
		failing := 0.0
		if st.Failing != nil {
			failing = 1
		}
		e.single("recall_write_queue_depth", "Messages waiting in the write-behind queue.", "gauge", float64(st.Queued))
		e.single("recall_write_queue_failing", "1 while writes to storage are failing (the queue keeps them and retries), else 0.", "gauge", failing)
		e.single("recall_write_failures_total", "Failed write attempts of the write-behind queue since start.", "counter", float64(st.Failures))
	}
	writeGo(e)
	writeProcess(e)
	return e.bytes()
}

// counterVec is a counter per combination of label values.
type counterVec struct {
	name, help string
	labels     []string
	mu         sync.Mutex
	values     map[string]*series
}

// series is one labelled value.
type series struct {
	values []string
	v      float64
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, values: map[string]*series{}}
}

// add adds d to the series of the label values (in the order of the
// labels given to newCounterVec).
func (c *counterVec) add(d float64, values ...string) {
	k := seriesKey(values)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.values[k]
	if s == nil {
		s = &series{values: values}
		c.values[k] = s
	}
	s.v += d
}

func (c *counterVec) write(e *expo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.family(c.name, c.help, "counter")
	for _, k := range sortedKeys(c.values) {
		s := c.values[k]
		e.sample(c.name, c.labels, s.values, s.v)
	}
}

// histogram counts observations into cumulative buckets.
type histogram struct {
	name, help string
	bounds     []float64
	mu         sync.Mutex
	counts     []uint64 // per bucket, not cumulative; the last is +Inf
	sum        float64
}

func newHistogram(name, help string, bounds []float64) *histogram {
	return &histogram{name: name, help: help, bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[i]++
	h.sum += v
}

func (h *histogram) write(e *expo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.family(h.name, h.help, "histogram")
	var cum uint64
	le := []string{"le"}
	for i, b := range h.bounds {
		cum += h.counts[i]
		e.sample(h.name+"_bucket", le, []string{formatFloat(b)}, float64(cum))
	}
	cum += h.counts[len(h.bounds)]
	e.sample(h.name+"_bucket", le, []string{"+Inf"}, float64(cum))
	e.sample(h.name+"_sum", nil, nil, h.sum)
	e.sample(h.name+"_count", nil, nil, float64(cum))
}
