package commands

import (
	"context"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// flow is a question waiting for the user's answer in one conversation.
type flow struct {
	expires time.Time
	// step handles the answer; it ends the flow (endFlow) or asks again.
	step func(ctx context.Context, c *Call, answer string) error
}

func (c *Commands) startFlow(key pipeline.Key, step func(ctx context.Context, c *Call, answer string) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	for k, f := range c.flows { // questions nobody answered
		if now.After(f.expires) {
			delete(c.flows, k)
		}
	}
	c.flows[key] = &flow{expires: now.Add(c.opts.FlowTTL), step: step}
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
