package memory

import "github.com/recallbot/recall/bench/chattext"

// benchText is the chat text generator of the benchmarks (the archive
// fixture's), for the search tests: chattext.Messages with memory's roles.
type benchText struct{ g *chattext.Messages }

func newBenchText(seed uint64) *benchText { return &benchText{chattext.NewMessages(seed)} }

// message is a chat message of role: users write 3–22 words, the assistant
// 12–56.
func (t *benchText) message(role Role, names []string) string {
	return t.g.Message(role == RoleAssistant, names)
}

// query is what a user might search the archive for: 1–4 content words.
func (t *benchText) query(names []string) string { return t.g.Query(names) }
