package figures

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/embed"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// A RecallChat is one conversation of a REALTALK-format benchmark
// (github.com/danny911kr/REALTALK, data/Chat_*.json): sessions of turns
// between two people, and questions with the turns that answer them.
type RecallChat struct {
	Name      string
	Turns     []RecallTurn
	Questions []RecallQuestion
}

// RecallTurn is one message of a benchmark chat.
type RecallTurn struct {
	ID      string // dia_id, "D1:2"
	Speaker string
	Text    string
	Time    time.Time
}

// RecallQuestion is a question and its evidence turns (dia_ids).
type RecallQuestion struct {
	Question string
	Evidence []string
	Category string
}

// SelectRecallChats keeps the chats whose number (the N of Chat_N_….json)
// is in spec: numbers and ranges separated by commas ("1-5", "6-10",
// "1,3,7"); an empty spec keeps them all. A subset shows whether a change
// holds on each half of the benchmark, not only on the whole.
func SelectRecallChats(chats []RecallChat, spec string) ([]RecallChat, error) {
	if strings.TrimSpace(spec) == "" {
		return chats, nil
	}
	want := map[int]bool{}
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		lo, hi, isRange := strings.Cut(p, "-")
		from, err1 := strconv.Atoi(strings.TrimSpace(lo))
		to, err2 := from, error(nil)
		if isRange {
			to, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil || from < 1 || to < from || to-from > 1000 {
			return nil, fmt.Errorf("chats %q: %q is not a chat number or a range like 1-5", spec, p)
		}
		for n := from; n <= to; n++ {
			want[n] = true
		}
	}
	var out []RecallChat
	for _, c := range chats {
		if m := chatNumber.FindStringSubmatch(c.Name); m != nil {
			if n, _ := strconv.Atoi(m[1]); want[n] {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("chats %q: no such chat", spec)
	}
	return out, nil
}

var chatNumber = regexp.MustCompile(`^Chat_(\d+)(_|$)`)

// realtalkTime is REALTALK's date_time layout.
const realtalkTime = "02.01.2006, 15:04:05"

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

// LoadRecallChats reads the top-level Chat_*.json files of dir (only those:
// a subfolder may hold a held-out set that must stay unseen).
func LoadRecallChats(dir string) ([]RecallChat, error) {
	files, err := filepath.Glob(filepath.Join(dir, "Chat_*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Chat_*.json files in %s (the data/ folder of REALTALK)", dir)
	}
	sort.Strings(files)
	var chats []RecallChat
	for _, f := range files {
		c, err := loadRecallChat(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		chats = append(chats, c)
	}
	return chats, nil
}

func loadRecallChat(path string) (RecallChat, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return RecallChat{}, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return RecallChat{}, err
	}
	c := RecallChat{Name: strings.TrimSuffix(filepath.Base(path), ".json")}
	type sess struct {
		n     int
		turns []RecallTurn
	}
	var sessions []sess
	for k, v := range doc {
		m := sessionKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		var turns []struct {
			Speaker  string `json:"speaker"`
			Text     string `json:"clean_text"`
			DateTime string `json:"date_time"`
			DiaID    string `json:"dia_id"`
		}
		if err := json.Unmarshal(v, &turns); err != nil {
			return c, fmt.Errorf("%s: %w", k, err)
		}
		n, _ := strconv.Atoi(m[1])
		s := sess{n: n}
		for _, t := range turns {
			at, err := time.Parse(realtalkTime, t.DateTime)
			if err != nil {
				return c, fmt.Errorf("%s %s: %w", k, t.DiaID, err)
			}
			s.turns = append(s.turns, RecallTurn{ID: t.DiaID, Speaker: t.Speaker, Text: t.Text, Time: at})
		}
		sessions = append(sessions, s)
	}
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].n < sessions[j].n })
	for _, s := range sessions {
		c.Turns = append(c.Turns, s.turns...)
	}
	var qa []struct {
		Question string          `json:"question"`
		Evidence []string        `json:"evidence"`
		Category json.RawMessage `json:"category"`
	}
	if err := json.Unmarshal(doc["qa"], &qa); err != nil {
		return c, fmt.Errorf("qa: %w", err)
	}
	for _, q := range qa {
		c.Questions = append(c.Questions, RecallQuestion{Question: q.Question, Evidence: q.Evidence, Category: strings.Trim(string(q.Category), `"`)})
	}
	return c, nil
}

var (
	evidenceSep   = regexp.MustCompile(`[;,.]`)
	evidenceID    = regexp.MustCompile(`^D?(\d+):(\d+)$`)
	evidenceRange = regexp.MustCompile(`^D?(\d+):(\d+)-D?(\d+):(\d+)$`)
)

// EvidenceIDs normalizes REALTALK's evidence lists, which are mostly
// "D1:6" but also hold "D 2:18", "23:29", "D13:4. D14:4", "D1:2;D3:4" and
// ranges "D12:3-D12:5" (expanded within one session).
func EvidenceIDs(raw []string) []string {
	var out []string
	for _, r := range raw {
		for _, p := range evidenceSep.Split(strings.ReplaceAll(r, " ", ""), -1) {
			if m := evidenceRange.FindStringSubmatch(p); m != nil && m[1] == m[3] {
				from, _ := strconv.Atoi(m[2])
				to, _ := strconv.Atoi(m[4])
				for i := from; i <= to && i-from < 100; i++ {
					out = append(out, "D"+m[1]+":"+strconv.Itoa(i))
				}
				continue
			}
			if m := evidenceID.FindStringSubmatch(p); m != nil {
				out = append(out, "D"+m[1]+":"+m[2])
			}
		}
	}
	return out
}

// oneLine is text with every run of white space one space: a prompt
// carries a multi-line message on one line (assemble's snippets), and a
// turn is found when its words are there in order.
func oneLine(text string) string { return strings.Join(strings.Fields(text), " ") }

// RecallOptions configure a recall run.
type RecallOptions struct {
	Dir      string // where the store lives (a temporary directory when empty)
	Budget   int    // the snippets' budget (memory.budget.snippets; 1,500 when 0)
	Model    string // the counter's model (the bot's default when empty)
	Progress func(format string, args ...any)
	// Embeddings, when set, scores hybrid retrieval too (RecallResult.Hybrid):
	// every chat is embedded through it, and each question asked with the
	// similarity ranking fused in, as a turn with memory.embeddings does.
	Embeddings embed.Model
	// DatabaseURL keeps the conversations in that PostgreSQL database
	// (database.url) instead of SQLite in Dir.
	DatabaseURL string
}

// RecallScore is one way of retrieving, scored.
type RecallScore struct {
	Questions  int
	Recall     float64            // mean over questions of the evidence fraction found
	ByCategory map[string]float64 // the same per category
	AnyFound   float64            // fraction of questions with at least one evidence turn found
	Tokens     float64            // mean snippet tokens
	Latency    []time.Duration    // per question
}

// RecallResult is ours beside the baseline, and stock FTS5's bm25() top 20
// within the same budget (StockSearch, its statistics over every chat).
type RecallResult struct {
	Ours, Baseline, Stock RecallScore
	Hybrid                *RecallScore // with RecallOptions.Embeddings
	// Plain and Feedback are the snippets without and with pseudo-relevance
	// feedback (assemble.WithFeedback); Ours is the one memory.feedback's
	// default chooses.
	Plain, Feedback RecallScore
	Chats, Turns    int
}

// Recall imports every chat as an archived group conversation (both
// speakers as users with their names and the real times) through the
// store's import, then asks each question through the assembler, as a turn
// does, and scores which evidence turns' text is in the prompt. The baseline
// is plain BM25: the top 20 messages within the snippets' budget.
func Recall(ctx context.Context, chats []RecallChat, o RecallOptions) (RecallResult, error) {
	var res RecallResult
	if o.Budget <= 0 {
		o.Budget = assemble.DefaultBudget.Snippets
	}
	if o.Model == "" {
		o.Model = "gpt-4o-mini"
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "recall-bench-recall-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	st, err := memory.Open(ctx, memory.Options{Dir: o.Dir, DatabaseURL: o.DatabaseURL, Defaults: memory.Settings{MemoryEnabled: true, Storage: memory.StorageSQLite, Threshold: 10}})
	if err != nil {
		return res, err
	}
	defer st.Close(context.Background())
	counter := llm.NewCounter(o.Model)
	budget := assemble.DefaultBudget
	budget.Snippets = o.Budget
	asm := assemble.New(st, counter, budget)
	fbAsm := assemble.New(st, counter, budget, assemble.WithFeedback())
	feedbackOn := config.Default().Memory.Feedback
	var hybridAsm *assemble.Assembler
	if o.Embeddings != nil {
		s := embed.NewSearcher(st.SQLite(), o.Embeddings, embed.SearcherOptions{Timeout: time.Minute, LoadWait: time.Hour})
		defer func() { _ = s.Close(context.Background()) }()
		opts := []assemble.Option{assemble.WithVectors(s)}
		if feedbackOn {
			opts = append(opts, assemble.WithFeedback())
		}
		hybridAsm = assemble.New(st, counter, budget, opts...)
	}

	type catSum struct{ sum, n float64 }
	score := func() (*RecallScore, map[string]*catSum) {
		return &RecallScore{ByCategory: map[string]float64{}}, map[string]*catSum{}
	}
	ours, oursCat := score()
	base, baseCat := score()
	hyb, hybCat := score()
	fb, fbCat := score()
	stock, stockCat := score()
	// The questions, asked again of stock FTS5 once every chat is in.
	type asked struct {
		key      pipeline.Key
		question string
		cat      string
		frac     func(string) float64
	}
	var again []asked
	add := func(s *RecallScore, cats map[string]*catSum, cat string, frac float64, tokens int, took time.Duration) {
		s.Questions++
		s.Recall += frac
		if frac > 0 {
			s.AnyFound++
		}
		s.Tokens += float64(tokens)
		s.Latency = append(s.Latency, took)
		c := cats[cat]
		if c == nil {
			c = &catSum{}
			cats[cat] = c
		}
		c.sum += frac
		c.n++
	}
	for ci, c := range chats {
		key := pipeline.Key{Channel: "telegram", Chat: strconv.Itoa(-1001000 - ci)}
		texts := map[string]string{}
		conv := memory.ConversationData{Key: key.String()}
		speakers := map[string]string{}
		for i, t := range c.Turns {
			texts[t.ID] = t.Text
			id, ok := speakers[t.Speaker]
			if !ok {
				id = strconv.Itoa(1000 + len(speakers))
				speakers[t.Speaker] = id
			}
			conv.Messages = append(conv.Messages, memory.Message{
				Role: memory.RoleUser, SenderID: id, SenderName: t.Speaker, PlatformID: strconv.Itoa(i + 1),
				Text: t.Text, Time: t.Time, Tokens: counter.Count(t.Text),
			})
		}
		set := memory.Settings{Owner: key.Owner(), MemoryEnabled: true, Storage: memory.StorageSQLite, Threshold: 10}
		if _, err := st.Import(ctx, memory.NewExport(memory.OwnerData{Owner: key.Owner(), Settings: &set, Conversations: []memory.ConversationData{conv}})); err != nil {
			return res, fmt.Errorf("importing %s: %w", c.Name, err)
		}
		if o.Embeddings != nil {
			if _, err := embed.Reindex(ctx, st.SQLite(), nil, o.Embeddings, 256, nil); err != nil {
				return res, fmt.Errorf("embedding %s: %w", c.Name, err)
			}
		}
		res.Chats++
		res.Turns += len(c.Turns)
		now := c.Turns[len(c.Turns)-1].Time.Add(time.Hour)
		for _, q := range c.Questions {
			var ev []string
			for _, e := range EvidenceIDs(q.Evidence) {
				if t, ok := texts[e]; ok && strings.TrimSpace(t) != "" {
					ev = append(ev, oneLine(t))
				}
			}
			if len(ev) == 0 {
				continue
			}
			frac := func(in string) float64 {
				in = oneLine(in)
				n := 0
				for _, t := range ev {
					if strings.Contains(in, t) {
						n++
					}
				}
				return float64(n) / float64(len(ev))
			}
			// score asks the question through a and adds what its
			// snippets found to r.
			score := func(a *assemble.Assembler, r *RecallScore, cats map[string]*catSum, with string) error {
				t0 := time.Now()
				p, err := a.Build(ctx, assemble.Request{Key: key, Text: q.Question, Memory: true, Now: now})
				took := time.Since(t0)
				if err != nil {
					return fmt.Errorf("%s: %q%s: %w", c.Name, q.Question, with, err)
				}
				var prompt strings.Builder
				for _, m := range p.Messages[:len(p.Messages)-1] { // not the question itself
					prompt.WriteString(m.Content + "\n")
				}
				add(r, cats, q.Category, frac(prompt.String()), p.Breakdown.Part(assemble.PartSnippets).Tokens, took)
				return nil
			}
			if err := score(asm, ours, oursCat, ""); err != nil {
				return res, err
			}
			if err := score(fbAsm, fb, fbCat, " with feedback"); err != nil {
				return res, err
			}
			if hybridAsm != nil {
				if err := score(hybridAsm, hyb, hybCat, " with embeddings"); err != nil {
					return res, err
				}
			}

			t0 := time.Now()
			hits, err := st.Search(ctx, key, memory.Query{Text: q.Question, Limit: 20, TokenBudget: o.Budget})
			took := time.Since(t0)
			if err != nil {
				return res, err
			}
			var got strings.Builder
			tokens := 0
			for _, h := range hits {
				got.WriteString(h.Message.Text + "\n")
				tokens += h.Message.Tokens
			}
			add(base, baseCat, q.Category, frac(got.String()), tokens, took)
			again = append(again, asked{key, q.Question, q.Category, frac})
		}
		if o.Progress != nil {
			o.Progress("  %s: %d turns, %d questions", c.Name, len(c.Turns), len(c.Questions))
		}
	}
	stockPath := filepath.Join(o.Dir, "stock.db")
	if err := BuildStockIndex(ctx, st.SQLite().Path(), stockPath); err != nil {
		return res, err
	}
	sdb, err := OpenStockReader(st.SQLite().Path(), stockPath)
	if err != nil {
		return res, err
	}
	defer sdb.Close()
	for _, a := range again {
		t0 := time.Now()
		hits, err := StockSearch(ctx, sdb, a.key, memory.Query{Text: a.question, Limit: 20, TokenBudget: o.Budget})
		took := time.Since(t0)
		if err != nil {
			return res, fmt.Errorf("stock FTS5: %q: %w", a.question, err)
		}
		var got strings.Builder
		tokens := 0
		for _, h := range hits {
			got.WriteString(h.Message.Text + "\n")
			tokens += h.Message.Tokens
		}
		add(stock, stockCat, a.cat, a.frac(got.String()), tokens, took)
	}
	finish := func(s *RecallScore, cats map[string]*catSum) RecallScore {
		if s.Questions > 0 {
			n := float64(s.Questions)
			s.Recall /= n
			s.AnyFound /= n
			s.Tokens /= n
		}
		for k, c := range cats {
			s.ByCategory[k] = c.sum / c.n
		}
		return *s
	}
	res.Plain, res.Baseline, res.Stock = finish(ours, oursCat), finish(base, baseCat), finish(stock, stockCat)
	res.Feedback = finish(fb, fbCat)
	res.Ours = res.Plain
	if feedbackOn {
		res.Ours = res.Feedback
	}
	if o.Embeddings != nil {
		h := finish(hyb, hybCat)
		res.Hybrid = &h
	}
	return res, nil
}
