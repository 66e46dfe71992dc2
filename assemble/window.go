package assemble

// Within returns the budget for a model whose context window holds only
// total tokens of prompt, smaller than the budget's total. Each part keeps
// its own budget up to a share of the window (the system prompt and the
// notes a quarter each, summaries a third, snippets a quarter, recent turns
// all of it); the parts are then trimmed to the total as always: archive
// snippets first, then the oldest recent turns, then summaries, then notes.
// So a small window is filled, not cut by the parts' nominal sizes: a short
// system prompt leaves its share to the recent turns, and the summaries are
// kept. A total at or above b.Total changes nothing.
func (b Budget) Within(total int) Budget {
	if total <= 0 || total >= b.Total {
		return b
	}
	b.System = min(b.System, total/4)
	b.Memories = min(b.Memories, total/4)
	b.Summaries = min(b.Summaries, total/3)
	b.Snippets = min(b.Snippets, total/4)
	b.Recent = min(b.Recent, total)
	b.Total = total
	return b
}
