package ops

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/recallbot/recall/memory"
)

// HealthReporter is implemented by a chat channel (adapter) that knows
// whether it is connected. Channels without it are reported healthy.
type HealthReporter interface {
	// Health returns nil while the channel is connected, else an error
	// saying what is wrong in words for an operator (it is shown on
	// /healthz, so never a token). It must answer at once, from state the
	// channel already has: no network call.
	Health() error
}

// Check is one part of the health report.
type Check struct {
	Name string // the key in the report: "database", "write_queue", "telegram"
	// Run returns nil when the part is healthy. ctx ends when the client
	// goes away.
	Run func(ctx context.Context) error
	// Degrades, when true, makes this part's failure a degraded report
	// (HTTP 200, status "degraded") instead of an unavailable one: the
	// bot runs and answers what it can, and restarting it would not help
	// (a part the operator has not configured).
	Degrades bool
}

// Querier runs a query (*sql.DB).
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DatabaseTimeout is how long the database may take to answer SELECT 1.
const DatabaseTimeout = 2 * time.Second

// Database checks that db answers SELECT 1 within DatabaseTimeout.
func Database(db Querier) Check {
	return Check{Name: "database", Run: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, DatabaseTimeout)
		defer cancel()
		var one int
		err := db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("not answering within %s", DatabaseTimeout)
		case err != nil:
			return err
		case one != 1:
			return fmt.Errorf("SELECT 1 answered %d", one)
		}
		return nil
	}}
}

// WriteQueue is the write-behind queue (*memory.Store).
type WriteQueue interface {
	WriteStats() memory.WriteStats
}

// WriteQueueCheck reports the write queue unhealthy while its writes fail.
func WriteQueueCheck(q WriteQueue) Check {
	return Check{Name: "write_queue", Run: func(context.Context) error {
		st := q.WriteStats()
		if st.Failing == nil {
			return nil
		}
		return fmt.Errorf("writes failing since %s (%d messages waiting): %w",
			st.Since.UTC().Format(time.RFC3339), st.Queued, st.Failing)
	}}
}

// Channel checks a chat channel: its Health when it implements
// HealthReporter, healthy otherwise.
func Channel(name string, channel any) Check {
	return Check{Name: name, Run: func(context.Context) error {
		if h, ok := channel.(HealthReporter); ok {
			return h.Health()
		}
		return nil
	}}
}

// LLM checks the language model: its Health (*llm.Client), from the
// outcome of the last calls: unhealthy after a run of failed calls or a
// failed start-up check, healthy again after a success.
func LLM(model HealthReporter) Check {
	return Check{Name: "llm", Run: func(context.Context) error { return model.Health() }}
}

// NotConfigured is the text of an llm part when no model is configured.
const NotConfigured = "not configured: no chat message can be answered (commands work); " +
	"set llm.base_url and llm.model (RECALL_LLM_BASE_URL, RECALL_LLM_MODEL) for an OpenAI-compatible server such as Ollama, " +
	"or llm.api_key (RECALL_LLM_API_KEY) for OpenAI, then restart"

// LLMNotConfigured is the llm part of a bot with no model configured: it
// always reports NotConfigured, which degrades the report (Check.Degrades).
func LLMNotConfigured() Check {
	return Check{Name: "llm", Degrades: true, Run: func(context.Context) error { return errors.New(NotConfigured) }}
}

// Report is the /healthz body.
type Report struct {
	Status string            `json:"status"` // StatusOK, StatusDegraded or StatusUnavailable
	Parts  map[string]string `json:"parts"`  // check name → "ok" or what is wrong
	// Notes inform without judging (never make the status unavailable):
	// which replica answered, who holds a lease.
	Notes map[string]string `json:"notes,omitempty"`
}

// Note is one line of information in the report.
type Note struct {
	Name string
	// Run says how things stand; ctx ends when the client goes away.
	Run func(ctx context.Context) string
}

// Report statuses. ServeHTTP answers 200 for StatusOK and StatusDegraded
// (the bot runs, but a part it needs is missing: the parts say which), 503
// for StatusUnavailable.
const (
	StatusOK          = "ok"
	StatusDegraded    = "degraded"
	StatusUnavailable = "unavailable"
)

// Health runs the checks for /healthz. Checks may be added while it serves.
type Health struct {
	redact func(string) string

	mu     sync.Mutex
	checks []Check
	notes  []Note
}

// NewHealth returns a Health running checks. redact (may be nil) scrubs
// secrets from the messages of failing checks.
func NewHealth(redact func(string) string, checks ...Check) *Health {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Health{redact: redact, checks: append([]Check(nil), checks...)}
}

// Add adds a check (a channel, once it is set up).
func (h *Health) Add(c Check) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks = append(h.checks, c)
}

// AddNote adds a line of information to the report.
func (h *Health) AddNote(n Note) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, n)
}

// Report runs every check, one after the other, then the notes. A failing
// check makes the status unavailable, or degraded when it Degrades (and
// no other check fails).
func (h *Health) Report(ctx context.Context) Report {
	h.mu.Lock()
	checks := append([]Check(nil), h.checks...)
	notes := append([]Note(nil), h.notes...)
	h.mu.Unlock()
	r := Report{Status: StatusOK, Parts: make(map[string]string, len(checks))}
	for _, c := range checks {
		if err := c.Run(ctx); err != nil {
			switch {
			case !c.Degrades:
				r.Status = StatusUnavailable
			case r.Status == StatusOK:
				r.Status = StatusDegraded
			}
			r.Parts[c.Name] = h.redact(err.Error())
			continue
		}
		r.Parts[c.Name] = StatusOK
	}
	for i, n := range notes {
		if i == 0 {
			r.Notes = make(map[string]string, len(notes))
		}
		r.Notes[n.Name] = h.redact(n.Run(ctx))
	}
	return r
}

// ServeHTTP answers the report as JSON: 200 when every part is healthy or
// the report is only degraded, 503 when it is unavailable.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep := h.Report(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if rep.Status == StatusUnavailable {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}
