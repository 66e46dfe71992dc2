// Package metrics owns Recall's Prometheus metrics: its counters and the
// latency histogram on a registry of its own, with client_golang's Go
// runtime and process collectors, and the promhttp handler that serves
// them.
//
// Metrics observes chat turns (it implements chat.Observer), counts
// summaries and channel reconnects when told, and reads the write queue's
// state at every scrape. It imports no Recall package but llm and memory,
// for their types.
package metrics
