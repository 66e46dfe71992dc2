package assemble

// Within returns the budget cut down to total tokens, for a model whose
// context window is smaller than the budget: archive snippets go first, then
// recent turns (down to a floor that keeps the last exchange), then notes
// and facts; summaries and the system prompt are kept as long as anything
// else can give. A total at or above b.Total changes nothing.
func (b Budget) Within(total int) Budget {
	if total <= 0 || total >= b.Total {
		return b
	}
	over := b.Total - total
	take := func(part *int, floor int) {
		if over <= 0 || *part <= floor {
			return
		}
		cut := min(over, *part-floor)
		*part -= cut
		over -= cut
	}
	take(&b.Snippets, 0)
	take(&b.Recent, min(b.Recent, 400))
	take(&b.Memories, 0)
	take(&b.Summaries, 0)
	take(&b.Recent, 0)
	take(&b.System, min(b.System, 200))
	b.Total = total
	return b
}
