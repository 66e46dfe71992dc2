package metrics

import (
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	dto "github.com/prometheus/client_model/go"

	"github.com/recallbot/recall/llm"
)

// published is every family /metrics served before it moved to
// client_golang, with its type and the label names of its series (sorted;
// the replica label comes on top with several replicas): dashboards and
// alerts query these, so none may go or change.
var published = map[string]struct {
	typ    dto.MetricType
	labels string
}{
	"recall_turns_total":               {dto.MetricType_COUNTER, "channel,outcome"},
	"recall_llm_latency_seconds":       {dto.MetricType_HISTOGRAM, ""},
	"recall_llm_tokens_total":          {dto.MetricType_COUNTER, "kind,model"},
	"recall_summaries_created_total":   {dto.MetricType_COUNTER, "level"},
	"recall_channel_reconnects_total":  {dto.MetricType_COUNTER, "channel"},
	"recall_tool_calls_total":          {dto.MetricType_COUNTER, "outcome,tool"},
	"recall_build_info":                {dto.MetricType_GAUGE, "version"},
	"recall_write_queue_depth":         {dto.MetricType_GAUGE, ""},
	"recall_write_queue_failing":       {dto.MetricType_GAUGE, ""},
	"recall_write_failures_total":      {dto.MetricType_COUNTER, ""},
	"go_goroutines":                    {dto.MetricType_GAUGE, ""},
	"go_threads":                       {dto.MetricType_GAUGE, ""},
	"go_info":                          {dto.MetricType_GAUGE, "version"},
	"go_memstats_alloc_bytes":          {dto.MetricType_GAUGE, ""},
	"go_memstats_alloc_bytes_total":    {dto.MetricType_COUNTER, ""},
	"go_memstats_heap_idle_bytes":      {dto.MetricType_GAUGE, ""},
	"go_memstats_heap_inuse_bytes":     {dto.MetricType_GAUGE, ""},
	"go_memstats_heap_objects":         {dto.MetricType_GAUGE, ""},
	"go_memstats_heap_released_bytes":  {dto.MetricType_GAUGE, ""},
	"go_memstats_heap_sys_bytes":       {dto.MetricType_GAUGE, ""},
	"go_memstats_next_gc_bytes":        {dto.MetricType_GAUGE, ""},
	"go_memstats_stack_inuse_bytes":    {dto.MetricType_GAUGE, ""},
	"go_memstats_sys_bytes":            {dto.MetricType_GAUGE, ""},
	"go_memstats_last_gc_time_seconds": {dto.MetricType_GAUGE, ""},
	"go_gc_cycles_total":               {dto.MetricType_COUNTER, ""},
	"go_gc_pause_seconds_total":        {dto.MetricType_COUNTER, ""},
	"process_cpu_seconds_total":        {dto.MetricType_COUNTER, ""},
	"process_resident_memory_bytes":    {dto.MetricType_GAUGE, ""},
	"process_virtual_memory_bytes":     {dto.MetricType_GAUGE, ""},
	"process_start_time_seconds":       {dto.MetricType_GAUGE, ""},
	"process_open_fds":                 {dto.MetricType_GAUGE, ""},
	"process_max_fds":                  {dto.MetricType_GAUGE, ""},
}

// parse reads a scrape with Prometheus' own text parser.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, text)
	}
	return fams
}

// labelNames is the sorted label names of m, without replica.
func labelNames(m *dto.Metric) string {
	var names []string
	for _, l := range m.GetLabel() {
		if l.GetName() != "replica" {
			names = append(names, l.GetName())
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// Every family served before is still served, with its type and labels,
// alone and with the replica label; so are the client library's
// standard ones.
func TestPublishedSeriesKept(t *testing.T) {
	for _, replica := range []string{"", "recall-1"} {
		m := New(Options{Version: "v1", Channels: []string{"telegram"}, WriteQueue: &fakeQueue{}, Replica: replica})
		m.Turn("telegram", "ok", time.Second, llm.Reply{Model: "m", PromptTokens: 3, CompletionTokens: 1})
		m.SummaryCreated(1)
		m.ToolCall("search_memory", "ok")
		fams := parse(t, scrape(t, m))
		for name, want := range published {
			f := fams[name]
			if f == nil {
				t.Errorf("replica %q: /metrics lacks %s", replica, name)
				continue
			}
			if f.GetType() != want.typ {
				t.Errorf("replica %q: %s is a %s, was a %s", replica, name, f.GetType(), want.typ)
			}
			for _, s := range f.GetMetric() {
				if got := labelNames(s); got != want.labels {
					t.Errorf("replica %q: %s has labels {%s}, was {%s}", replica, name, got, want.labels)
				}
				if replica != "" && !slices.ContainsFunc(s.GetLabel(), func(l *dto.LabelPair) bool {
					return l.GetName() == "replica" && l.GetValue() == replica
				}) {
					t.Errorf("%s has a series without replica=%q", name, replica)
				}
			}
		}
	}
}

// The standard collectors of client_golang are served, beyond the subset
// written by hand before (the GC pause summary, allocations, GOMAXPROCS,
// the process's network and page faults…), and Prometheus' global
// registry is left alone.
func TestStandardCollectors(t *testing.T) {
	runtime.GC()
	m := New(Options{WriteQueue: &fakeQueue{}})
	fams := parse(t, scrape(t, m))
	for name, typ := range map[string]dto.MetricType{
		"go_gc_duration_seconds":      dto.MetricType_SUMMARY,
		"go_memstats_mallocs_total":   dto.MetricType_COUNTER,
		"go_sched_gomaxprocs_threads": dto.MetricType_GAUGE,
		"go_gc_gomemlimit_bytes":      dto.MetricType_GAUGE,
	} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("/metrics has no %s %s", typ, name)
		}
	}
	if runtime.GOOS == "linux" {
		if fams["process_virtual_memory_max_bytes"] == nil {
			t.Error("/metrics has no process_virtual_memory_max_bytes (the process collector's)")
		}
	}
	if cycles := fams["go_gc_cycles_total"]; cycles == nil || cycles.GetMetric()[0].GetCounter().GetValue() < 1 {
		t.Errorf("go_gc_cycles_total after a collection: %v", cycles)
	}
	global, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range global {
		if strings.HasPrefix(f.GetName(), "recall_") {
			t.Errorf("%s is on Prometheus' global registry", f.GetName())
		}
	}
}

// A scraper asking for the protobuf format gets it (promhttp negotiates).
func TestProtobufScrape(t *testing.T) {
	m := New(Options{Channels: []string{"telegram"}})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	m.Handler().ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/vnd.google.protobuf") {
		t.Fatalf("Content-Type %q, want protobuf", ct)
	}
	dec := expfmt.NewDecoder(rec.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	found := false
	for {
		var f dto.MetricFamily
		if err := dec.Decode(&f); err != nil {
			break
		}
		found = found || f.GetName() == "recall_turns_total"
	}
	if !found {
		t.Error("the protobuf scrape has no recall_turns_total")
	}
}
