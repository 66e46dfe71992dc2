package pipeline

import "context"

// SubmitFunc is how a channel hands a normalized message to the pipeline
// (Dispatcher.Submit): it returns at once and never runs the turn itself;
// out is where the turn's answers go.
type SubmitFunc func(in Inbound, out Sender) error

// AcceptFunc makes a message durable before the platform is told it arrived
// (chat.Intake.Accept). It must be idempotent: a message may be accepted
// again after a reconnect or a restart.
type AcceptFunc func(ctx context.Context, in Inbound) error
