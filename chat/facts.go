package chat

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode"

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
Only extract factual information (preferences, personal details, decisions, goals). Write each fact as a short standalone sentence in the language of the exchange.
Start each line with its kind in square brackets: [preference], [personal], [decision], [goal] or [other].`

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
	for _, f := range parseFacts(reply.Text) {
		f.Created, f.Updated = now, now
		out = append(out, f)
	}
	return out, nil
}

// ParseFacts returns the texts of the facts in the model's answer (see
// parseFacts).
func ParseFacts(s string) []string {
	var out []string
	for _, f := range parseFacts(s) {
		out = append(out, f.Content)
	}
	return out
}

// parseFacts reads the model's answer robustly: "NONE" (any case, with
// punctuation), bullet or numbered lines, a JSON array of strings or of
// objects with a "fact"/"content"/"text" field, possibly inside a code fence.
// A line's leading "[kind]" (or an object's "tag"/"category"/"kind"/"tags")
// becomes the fact's tag, lower-case, for search_memory's tag search.
// Near-duplicates within one answer are dropped.
func parseFacts(s string) []memory.Fact {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "```json")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSuffix(s, "```")
	s = strings.TrimSpace(s)
	var raw []memory.Fact
	if strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{") {
		raw = parseJSONFacts(s)
	}
	if raw == nil {
		for _, l := range strings.Split(s, "\n") {
			raw = append(raw, memory.Fact{Content: l})
		}
	}
	var out []memory.Fact
	for _, f := range raw {
		text, tag := cleanFact(f.Content)
		if text == "" || isNone(text) {
			continue
		}
		f.Content = text
		if tag != "" && len(f.Tags) == 0 {
			f.Tags = []string{tag}
		}
		dup := false
		for _, o := range out {
			if memory.SimilarFacts(o.Content, f.Content) {
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

func parseJSONFacts(s string) []memory.Fact {
	var strs []string
	if json.Unmarshal([]byte(s), &strs) == nil {
		out := make([]memory.Fact, 0, len(strs))
		for _, t := range strs {
			out = append(out, memory.Fact{Content: t})
		}
		return out
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
	var out []memory.Fact
	for _, o := range objs {
		for _, k := range []string{"fact", "content", "text"} {
			if v, ok := o[k].(string); ok {
				out = append(out, memory.Fact{Content: v, Tags: jsonTags(o)})
				break
			}
		}
	}
	return out
}

// jsonTags reads the tags of a fact written as a JSON object.
func jsonTags(o map[string]any) []string {
	var tags []string
	add := func(v any) {
		if s, ok := v.(string); ok {
			if t := cleanTag(s); t != "" && !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	for _, k := range []string{"tag", "category", "kind"} {
		add(o[k])
	}
	if l, ok := o["tags"].([]any); ok {
		for _, v := range l {
			add(v)
		}
	}
	return tags
}

// maxTagLen bounds a tag read from the model's answer.
const maxTagLen = 24

// cleanTag is a tag as stored: lower-case letters, digits, '_' and '-', at
// most maxTagLen; "" when s is not one.
func cleanTag(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || len(s) > maxTagLen {
		return ""
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' {
			return ""
		}
	}
	return s
}

// cleanFact strips a line's bullet, numbering and leading "[tag]", and
// returns the text and the tag.
func cleanFact(f string) (string, string) {
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
	tag := ""
	if rest, ok := strings.CutPrefix(f, "["); ok {
		if t, text, ok := strings.Cut(rest, "]"); ok {
			if t = cleanTag(t); t != "" {
				tag, f = t, strings.TrimSpace(text)
				f = strings.TrimSpace(strings.TrimLeft(f, ":-–— "))
			}
		}
	}
	if len([]rune(f)) > 500 {
		f = string([]rune(f)[:500])
	}
	return strings.TrimSpace(f), tag
}

func isNone(f string) bool {
	n := strings.ToLower(strings.Trim(f, " .!\"'`"))
	return n == "none" || n == "no facts" || n == "n/a" || strings.HasPrefix(n, "none ")
}
