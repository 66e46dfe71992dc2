// Package memory owns everything Recall remembers: conversations and their
// messages, the archive (messages are archived into chunks, never deleted by
// summarization), multi-level summaries with provenance, per-owner settings,
// explicit user memories and extracted facts, full-text search of the archive,
// purge, retention, export and import.
//
// Two backends implement one API (Backend): SQLite, the default, one file
// <data.dir>/recall.db; and JSON, one file per owner under <data.dir>/json/.
// Store routes each owner to its backend and moves an owner between them.
// Writer is the write-behind queue that the chat pipeline appends through.
//
// Beside the SQLite writer run two goroutines of its own: the checkpointer
// (checkpoint.go) moves the WAL into the database file, and the index
// merger (merge.go) merges the search index's segments when the store is
// idle.
package memory
