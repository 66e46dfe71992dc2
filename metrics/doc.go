// Package metrics owns Recall's Prometheus metrics: the collectors, on a
// registry of their own (never the global one), and the handler that serves
// them in the Prometheus text format.
//
// Metrics observes chat turns (it implements chat.Observer), counts
// summaries and channel reconnects when told, and reads the write queue's
// state at every scrape. It imports no Recall package but llm and memory,
// for their types.
package metrics
