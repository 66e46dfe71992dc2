// Package memtools owns the memory tools the model may call during a turn
// (OpenAI-style function calling): search_memory, remember, forget,
// list_memories and recall_summary. A Box declares the tools and runs the
// model's calls against the memory store, always scoped to the turn's
// conversation and owner whatever the arguments say, with every result
// bounded by a token budget. Errors (bad arguments, an unknown tool, a
// refused note) are returned to the model as text, never as a failed turn.
package memtools
