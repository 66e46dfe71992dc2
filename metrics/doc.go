// Package metrics owns Recall's Prometheus metrics: its counters and the
// latency histogram, and the handler that serves them, with the Go
// runtime's and the process's own figures, in the Prometheus text format.
// It writes the format itself (Prometheus' client library weighed 1.2 MB
// of the binary).
//
// Metrics observes chat turns (it implements chat.Observer), counts
// summaries and channel reconnects when told, and reads the write queue's
// state at every scrape. It imports no Recall package but llm and memory,
// for their types.
package metrics
