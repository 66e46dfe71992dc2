// Package summary owns when and how conversations are summarized: the level-1
// trigger (user turns since the last summary reach the owner's threshold), the
// keep-recent window, archiving (never deleting) the summarized messages,
// folding summaries into higher levels, the caps on active summaries, and the
// LLM prompt. It runs in the background, never twice at once for one
// conversation; a failure archives nothing and the next trigger retries.
package summary
