package chat

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
)

// FactExtractor asks the LLM for durable facts about the user in one exchange.
type FactExtractor struct {
	Model Model
}

// FactPrompt is the extraction instruction (seed 001).
const FactPrompt = `Analyze the following exchange and extract important facts about the user.
Return one fact per line. If there are no facts worth remembering, return "NONE".
Only extract factual information (preferences, personal details, decisions, goals). Write each fact as a short standalone sentence in the language of the exchange.`

// Extract returns the facts of one exchange (none is not an error).
func (e *FactExtractor) Extract(ctx context.Context, user, assistant string) ([]memory.Fact, error) {
	reply, err := e.Model.Chat(ctx, []llm.Message{
		{Role: "system", Content: FactPrompt},
		{Role: "user", Content: "User: " + user + "\nAssistant: " + assistant},
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []memory.Fact
	for _, text := range ParseFacts(reply.Text) {
		out = append(out, memory.Fact{Content: text, Created: now, Updated: now})
	}
	return out, nil
}

// ParseFacts reads the model's answer robustly: "NONE" (any case, with
// punctuation), bullet or numbered lines, a JSON array of strings or of
// objects with a "fact"/"content"/"text" field, possibly inside a code fence.
// Near-duplicates within one answer are dropped.
func ParseFacts(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "```json")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSuffix(s, "```")
	s = strings.TrimSpace(s)
	var raw []string
	if strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{") {
		raw = parseJSONFacts(s)
	}
	if raw == nil {
		raw = append(raw, strings.Split(s, "\n")...)
	}
	var out []string
	for _, f := range raw {
		f = cleanFact(f)
		if f == "" || isNone(f) {
			continue
		}
		dup := false
		for _, o := range out {
			if memory.SimilarFacts(o, f) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

func parseJSONFacts(s string) []string {
	var strs []string
	if json.Unmarshal([]byte(s), &strs) == nil {
		return strs
	}
	var objs []map[string]any
	if json.Unmarshal([]byte(s), &objs) != nil {
		var wrapper map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &wrapper) != nil {
			return nil
		}
		for _, k := range []string{"facts", "Facts"} {
			if v, ok := wrapper[k]; ok {
				return parseJSONFacts(string(v))
			}
		}
		return nil
	}
	var out []string
	for _, o := range objs {
		for _, k := range []string{"fact", "content", "text"} {
			if v, ok := o[k].(string); ok {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

func cleanFact(f string) string {
	f = strings.TrimSpace(f)
	for {
		t := strings.TrimLeft(f, "-*•·‣ \t")
		// "1." / "2)" numbering
		i := 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i > 0 && i < len(t) && (t[i] == '.' || t[i] == ')') {
			t = strings.TrimSpace(t[i+1:])
		}
		if t == f {
			break
		}
		f = t
	}
	if len([]rune(f)) > 500 {
		f = string([]rune(f)[:500])
	}
	return strings.TrimSpace(f)
}

func isNone(f string) bool {
	n := strings.ToLower(strings.Trim(f, " .!\"'`"))
	return n == "none" || n == "no facts" || n == "n/a" || strings.HasPrefix(n, "none ")
}
