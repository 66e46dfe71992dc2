package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// QuestionStore keeps the conversations' pending questions durably
// (memory.Store): with it a question survives a restart, and an answer to
// one that expired meanwhile is told so. Without it questions live in this
// process only.
type QuestionStore interface {
	PutQuestion(ctx context.Context, q memory.Question) error
	DeleteQuestion(ctx context.Context, key pipeline.Key) error
	// Questions returns the questions waiting and those expired less
	// than a day before now.
	Questions(ctx context.Context, now time.Time) ([]memory.Question, error)
}

// stepFunc handles the answer to a question; it ends the flow (endFlow) or
// asks again.
type stepFunc func(ctx context.Context, c *Call, answer string) error

// flow is a question waiting for the user's answer in one conversation.
// Only the member who started it may answer it (in a group, other members'
// chatter and "yes" must never confirm someone else's /purge).
type flow struct {
	expires time.Time
	owner   string // sender id of the member who started it
	// kind and args say, as data, which step answers it (resume): what is
	// stored so that a restart can rebuild step.
	kind, args string
	// step handles the answer; nil when it cannot be rebuilt after a
	// restart (a Confirm's): an answer is then told the question expired.
	step stepFunc
}

// staleKeep is how long an expired question is remembered in memory (the
// store keeps them as long): an answer to it is told it expired.
const staleKeep = 24 * time.Hour

// Kinds of question, stored: each names the step that answers it.
const (
	askedStorage      = "summary.storage"
	askedThreshold    = "summary.threshold" // args: the storage chosen
	askedPurgeWhat    = "purge.what"
	askedPurgeDays    = "purge.days"
	askedPurgeConfirm = "purge.confirm" // args: what, days, "groups" when offered
	askedConfirm      = "confirm"       // a Confirm: not rebuilt after a restart
)

// resume rebuilds the step that answers a stored question; false when
// kind cannot be resumed.
func resume(kind, args string) (stepFunc, bool) {
	switch kind {
	case askedStorage:
		return storageStep, true
	case askedThreshold:
		storage, ok := parseStorage(args)
		return thresholdStep(storage), ok
	case askedPurgeWhat:
		return purgeWhatStep, true
	case askedPurgeDays:
		return daysStep, true
	case askedPurgeConfirm:
		f := strings.Fields(args)
		if len(f) != 3 {
			return nil, false
		}
		days, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, false
		}
		return purgeConfirmStep(f[0], days, f[2] == "groups"), true
	}
	return nil, false
}

// again is what the user sends to ask a question of kind anew.
func again(kind string) string {
	switch {
	case strings.HasPrefix(kind, "summary."):
		return "send /summary again"
	case strings.HasPrefix(kind, "purge."):
		return "send /purge again"
	}
	return "send it again"
}

// startFlow makes step the conversation's pending question of kind (args:
// what step needs to be rebuilt), answerable only by the sender of the
// current turn. It is stored when the store keeps questions; a failure to
// store it is logged: the question works until a restart.
func (c *Call) startFlow(ctx context.Context, key pipeline.Key, kind, args string, step stepFunc) {
	owner := c.Turn.In.SenderID
	c.mu.Lock()
	now := c.opts.Now()
	for k, f := range c.flows { // questions nobody answered
		if now.After(f.expires.Add(staleKeep)) {
			delete(c.flows, k)
		}
	}
	f := &flow{expires: now.Add(c.opts.FlowTTL), owner: owner, kind: kind, args: args, step: step}
	c.flows[key] = f
	c.mu.Unlock()
	if qs, ok := c.store.(QuestionStore); ok {
		q := memory.Question{Key: key, Asked: owner, Kind: kind, Args: args, Expires: f.expires}
		if err := qs.PutQuestion(context.WithoutCancel(ctx), q); err != nil {
			c.Turn.Logger().Warn("storing a question: a restart would lose it", "kind", kind, "err", err)
		}
	}
}

// LoadQuestions takes back the questions a previous run left pending (and
// those expired within a day, whose answer is told they expired). Without
// a QuestionStore it does nothing.
func (c *Commands) LoadQuestions(ctx context.Context) error {
	qs, ok := c.store.(QuestionStore)
	if !ok {
		return nil
	}
	list, err := qs.Questions(ctx, c.opts.Now())
	if err != nil {
		return fmt.Errorf("loading the pending questions: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range list {
		if _, asked := c.flows[q.Key]; asked {
			continue // asked in this run already
		}
		f := &flow{expires: q.Expires, owner: q.Asked, kind: q.Kind, args: q.Args}
		f.step, _ = resume(q.Kind, q.Args)
		c.flows[q.Key] = f
	}
	return nil
}

// answers reports whether in answers f: it comes from the member who
// started the question and, in a group, is addressed to the bot (a reply to
// it, a mention, a pressed button). Anything else passes by as if no
// question were pending.
func (f *flow) answers(in pipeline.Inbound) bool {
	if in.SenderID != f.owner {
		return false
	}
	return !in.IsGroup || in.MentionsBot || in.ReplyToBot || in.Choice != ""
}

// flowFor returns the conversation's pending question: nil when none
// waits, when it expired, or when it cannot be answered any more (asked
// before a restart that could not rebuild it).
func (c *Commands) flowFor(key pipeline.Key) *flow {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flows[key]
	if f == nil || f.step == nil || c.opts.Now().After(f.expires) {
		return nil
	}
	return f
}

// staleFor returns the conversation's question that can no longer be
// answered (expired within staleKeep, or lost to a restart), nil when
// none.
func (c *Commands) staleFor(key pipeline.Key) *flow {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flows[key]
	now := c.opts.Now()
	if f == nil || now.After(f.expires.Add(staleKeep)) || (f.step != nil && !now.After(f.expires)) {
		return nil
	}
	return f
}

// endFlow drops the conversation's pending question (from the store too)
// and reports whether one was still waiting (an expired one does not
// count).
func (c *Commands) endFlow(ctx context.Context, key pipeline.Key) bool {
	c.mu.Lock()
	f, ok := c.flows[key]
	delete(c.flows, key)
	c.mu.Unlock()
	if !ok {
		return false
	}
	if qs, isQS := c.store.(QuestionStore); isQS {
		if err := qs.DeleteQuestion(context.WithoutCancel(ctx), key); err != nil {
			c.opts.Log.Warn("forgetting an answered question", "key", key, "err", err)
		}
	}
	return f.step != nil && !c.opts.Now().After(f.expires)
}

// looksLikeAnswer reports whether a message reads as an answer to a
// question rather than as chat: a button, "cancel", yes or no, or a
// number.
func looksLikeAnswer(in pipeline.Inbound) bool {
	if in.Choice != "" {
		return true
	}
	a := normalize(in.Text)
	if isCancel(a) {
		return true
	}
	switch a {
	case "y", "yes", "n", "no", "ok", "sqlite", "json":
		return true
	}
	_, err := strconv.Atoi(strings.TrimSuffix(a, "."))
	return err == nil
}

// isCancel reports whether an answer cancels the question.
func isCancel(answer string) bool {
	switch normalize(answer) {
	case "cancel", "stop", "abort", "no thanks", "nevermind", "never mind", "/cancel", "cancel:":
		return true
	}
	return false
}
