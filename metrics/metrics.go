package metrics

import (
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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

// Metrics holds Recall's counters and the latency histogram on a registry
// of its own (never Prometheus' global one: two instances, as in tests, do
// not collide). Its methods are safe for concurrent use.
type Metrics struct {
	reg        *prometheus.Registry
	turns      *prometheus.CounterVec
	latency    prometheus.Histogram
	tokens     *prometheus.CounterVec
	summaries  *prometheus.CounterVec
	reconnects *prometheus.CounterVec
	toolCalls  *prometheus.CounterVec
}

// Outcomes of a turn that called the language model and got an answer; only
// these are timed by recall_llm_latency_seconds.
const (
	outcomeOK        = "ok"
	outcomeSendError = "send_error"
)

// New returns the metrics on a registry of their own, with client_golang's
// Go runtime and process collectors; the write queue, the Go runtime and
// the process are read at each scrape.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_turns_total",
			Help: "Chat turns answered, by channel and outcome (ok, llm_error, storage, send_error, not_configured, cancelled: stopped by the user)."},
			[]string{"channel", "outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "recall_llm_latency_seconds",
			Help:    "Time from a message's arrival at the responder to the language model's answer being ready to send, for turns the model answered.",
			Buckets: []float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120}}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_llm_tokens_total",
			Help: "Tokens used by chat replies as reported by the LLM server, by model and kind (prompt, completion)."},
			[]string{"model", "kind"}),
		summaries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_summaries_created_total",
			Help: "Summaries created, by level (1 = from messages, higher = folded summaries)."},
			[]string{"level"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_channel_reconnects_total",
			Help: "Times a chat channel reconnected after losing its connection."},
			[]string{"channel"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_tool_calls_total",
			Help: "Memory tool calls the model made, by tool and outcome (ok, error: refused or failed and told to the model, unknown: no such tool)."},
			[]string{"tool", "outcome"}),
	}
	var r prometheus.Registerer = m.reg
	if opts.Replica != "" {
		r = prometheus.WrapRegistererWith(prometheus.Labels{"replica": opts.Replica}, m.reg)
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "recall_build_info",
		Help:        "Always 1; the version label is the running build.",
		ConstLabels: prometheus.Labels{"version": opts.Version}})
	buildInfo.Set(1)
	r.MustRegister(m.turns, m.latency, m.tokens, m.summaries, m.reconnects, m.toolCalls, buildInfo,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gcTotals{})
	if opts.WriteQueue != nil {
		r.MustRegister(writeQueue{opts.WriteQueue})
	}
	for _, ch := range opts.Channels {
		m.reconnects.WithLabelValues(ch)
		m.turns.WithLabelValues(ch, outcomeOK)
	}
	return m
}

// Turn records a finished turn (chat.Observer): its outcome, and for turns
// the model answered the latency and the tokens it reported.
func (m *Metrics) Turn(channel, outcome string, latency time.Duration, reply llm.Reply) {
	m.turns.WithLabelValues(channel, outcome).Inc()
	if outcome != outcomeOK && outcome != outcomeSendError {
		return
	}
	m.latency.Observe(latency.Seconds())
	model := reply.Model
	if model == "" {
		model = "unknown"
	}
	if reply.PromptTokens > 0 {
		m.tokens.WithLabelValues(model, "prompt").Add(float64(reply.PromptTokens))
	}
	if reply.CompletionTokens > 0 {
		m.tokens.WithLabelValues(model, "completion").Add(float64(reply.CompletionTokens))
	}
}

// SummaryCreated counts one summary of the given level.
func (m *Metrics) SummaryCreated(level int) {
	m.summaries.WithLabelValues(strconv.Itoa(level)).Inc()
}

// ToolCall counts one memory tool call (memtools.Observer).
func (m *Metrics) ToolCall(tool, outcome string) {
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
}

// ChannelReconnected counts one reconnect of a chat channel ("telegram",
// "whatsapp").
func (m *Metrics) ChannelReconnected(channel string) {
	m.reconnects.WithLabelValues(channel).Inc()
}

// Handler serves the metrics with promhttp (the text format, or what the
// scraper asks for). A collector that fails leaves its series out of the
// scrape, not the others.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// writeQueue reads the write-behind queue's state once per scrape.
type writeQueue struct{ q WriteQueue }

var (
	queueDepthDesc = prometheus.NewDesc("recall_write_queue_depth",
		"Messages waiting in the write-behind queue.", nil, nil)
	queueFailingDesc = prometheus.NewDesc("recall_write_queue_failing",
		"1 while writes to storage are failing (the queue keeps them and retries), else 0.", nil, nil)
	writeFailuresDesc = prometheus.NewDesc("recall_write_failures_total",
		"Failed write attempts of the write-behind queue since start.", nil, nil)
)

func (w writeQueue) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueFailingDesc
	ch <- writeFailuresDesc
}

func (w writeQueue) Collect(ch chan<- prometheus.Metric) {
	st := w.q.WriteStats()
	failing := 0.0
	if st.Failing != nil {
		failing = 1
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(queueFailingDesc, prometheus.GaugeValue, failing)
	ch <- prometheus.MustNewConstMetric(writeFailuresDesc, prometheus.CounterValue, float64(st.Failures))
}

// gcTotals keeps two series Recall served before it used client_golang,
// which dashboards may query: the garbage collector's cycles and its total
// pause. They are go_gc_duration_seconds' count and sum under other names.
type gcTotals struct{}

var (
	gcCyclesDesc = prometheus.NewDesc("go_gc_cycles_total",
		"Completed garbage collection cycles (the count of go_gc_duration_seconds).", nil, nil)
	gcPauseDesc = prometheus.NewDesc("go_gc_pause_seconds_total",
		"Total time the world was stopped for garbage collection (the sum of go_gc_duration_seconds).", nil, nil)
)

func (gcTotals) Describe(ch chan<- *prometheus.Desc) {
	ch <- gcCyclesDesc
	ch <- gcPauseDesc
}

func (gcTotals) Collect(ch chan<- prometheus.Metric) {
	var st debug.GCStats
	debug.ReadGCStats(&st)
	ch <- prometheus.MustNewConstMetric(gcCyclesDesc, prometheus.CounterValue, float64(st.NumGC))
	ch <- prometheus.MustNewConstMetric(gcPauseDesc, prometheus.CounterValue, st.PauseTotal.Seconds())
}
