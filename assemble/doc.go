// Package assemble owns the prompt: before each LLM call it builds the context
// for one conversation inside a token budget — the system prompt, the user's
// memories and relevant facts, the active summaries (highest level first),
// snippets retrieved from the archive, the recent turns, and the current
// message — and trims it in a fixed order when it does not fit. The Breakdown
// it returns is what /context shows the user.
package assemble
