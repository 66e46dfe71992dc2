package commands

import (
	"context"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// flow is a question waiting for the user's answer in one conversation.
// Only the member who started it may answer it (in a group, other members'
// chatter and "yes" must never confirm someone else's /purge).
type flow struct {
	expires time.Time
	owner   string // sender id of the member who started it
	// step handles the answer; it ends the flow (endFlow) or asks again.
	step func(ctx context.Context, c *Call, answer string) error
}

// startFlow makes step the conversation's pending question, answerable only
// by the sender of the current turn.
func (c *Call) startFlow(key pipeline.Key, step func(ctx context.Context, c *Call, answer string) error) {
	owner := c.Turn.In.SenderID
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	for k, f := range c.flows { // questions nobody answered
		if now.After(f.expires) {
			delete(c.flows, k)
		}
	}
	c.flows[key] = &flow{expires: now.Add(c.opts.FlowTTL), owner: owner, step: step}
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

// flowFor returns the conversation's pending question, dropping it when expired.
func (c *Commands) flowFor(key pipeline.Key) *flow {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flows[key]
	if f != nil && c.opts.Now().After(f.expires) {
		delete(c.flows, key)
		return nil
	}
	return f
}

// endFlow drops the conversation's pending question and reports whether one
// was still waiting (an expired one does not count).
func (c *Commands) endFlow(key pipeline.Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.flows[key]
	delete(c.flows, key)
	return ok && !c.opts.Now().After(f.expires)
}

// isCancel reports whether an answer cancels the question.
func isCancel(answer string) bool {
	switch normalize(answer) {
	case "cancel", "stop", "abort", "no thanks", "nevermind", "never mind", "/cancel", "cancel:":
		return true
	}
	return false
}
