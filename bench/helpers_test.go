package bench

// Helpers of the end-to-end benchmarks: the wiring of cmd/bot/wire.go
// rebuilt from config.Default(), a deterministic chat-text generator, an
// instant fake model, senders, the cached 100k-archive fixture and
// percentiles.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/recallbot/recall/assemble"
	"github.com/recallbot/recall/chat"
	"github.com/recallbot/recall/commands"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
	"github.com/recallbot/recall/summary"
)

// ---------------------------------------------------------------------------
// Wiring

// model is what the wiring needs from an LLM: chat replies and summaries.
// *llm.Client and *fakeModel implement it.
type model interface {
	chat.Model
	summary.LLM
}

// rigConfig chooses how a rig differs from the default configuration.
type rigConfig struct {
	dir       string
	model     model
	threshold int  // memory.threshold (summary every n user turns); 0 = the default (10)
	bgSummary bool // the responder starts summaries in the background (as wired); else none
	allowed   []string
	// wrapAsm / wrapStore let a benchmark time the assembly and the
	// responder's store calls; nil leaves them alone.
	wrapAsm   func(chat.Assembler) chat.Assembler
	wrapStore func(*memory.Store) chat.Store
	log       *slog.Logger // nil discards
}

// rig is the application as cmd/bot/wire.go builds it, with config.Default()
// values: access, dedupe and commands middleware in front of the responder.
type rig struct {
	cfg        config.Config
	store      *memory.Store
	counter    llm.Counter
	summarizer *summary.Summarizer
	responder  *chat.Responder
	handler    pipeline.Handler
}

var discardLog = slog.New(slog.DiscardHandler)

func newRig(b *testing.B, rc rigConfig) *rig {
	b.Helper()
	ctx := context.Background()
	cfg := config.Default()
	log := rc.log
	if log == nil {
		log = discardLog
	}
	if rc.threshold > 0 {
		cfg.Memory.Threshold = rc.threshold
	}
	defaults := memory.Settings{
		MemoryEnabled: cfg.Memory.EnabledByDefault,
		Storage:       memory.Storage(cfg.Memory.Storage),
		Threshold:     cfg.Memory.Threshold,
	}
	store, err := memory.Open(ctx, memory.Options{
		Dir: rc.dir, Defaults: defaults, MaxMemories: cfg.Memory.MaxMemories,
		QueueSize: cfg.Memory.WriteQueue, Logger: log,
	})
	if err != nil {
		b.Fatal(err)
	}
	counter := llm.NewCounter(cfg.LLM.Model)
	bu := cfg.Memory.Budget
	facts := 0
	if cfg.Memory.Facts.Enabled {
		facts = cfg.Memory.Facts.Budget
	}
	var asm chat.Assembler = assemble.New(store, counter, assemble.Budget{Total: bu.Total, System: bu.System,
		Memories: bu.Memories + facts, Summaries: bu.Summaries, Snippets: bu.Snippets, Recent: bu.Recent})
	if rc.wrapAsm != nil {
		asm = rc.wrapAsm(asm)
	}
	policy := summary.Policy{KeepRecentTurns: cfg.Memory.KeepRecentTurns, MaxActivePerLevel: cfg.Memory.MaxActivePerLevel, MaxActiveTotal: cfg.Memory.MaxActiveTotal}
	summarizer := summary.New(store, rc.model, counter, policy, log)
	var chatSum chat.Summarizer
	if rc.bgSummary {
		chatSum = summarizer
	}
	var cstore chat.Store = store
	if rc.wrapStore != nil {
		cstore = rc.wrapStore(store)
	}
	responder := chat.New(cstore, rc.model, asm, chatSum, counter, chat.Options{
		SystemPrompt: cfg.LLM.SystemPrompt, Facts: cfg.Memory.Facts.Enabled, MaxMemories: cfg.Memory.MaxMemories, Log: log,
	})
	cmds := commands.New(store, summarizer, responder, commands.Options{Defaults: defaults, Facts: cfg.Memory.Facts.Enabled, Log: log})
	access := pipeline.NewAccess(cfg.Access.Open, rc.allowed)
	handler := pipeline.Chain(responder,
		access.Middleware(),
		pipeline.Dedupe(store, log),
		cmds.Middleware(),
	)
	return &rig{cfg: cfg, store: store, counter: counter, summarizer: summarizer, responder: responder, handler: handler}
}

// close waits for background work and flushes and closes the store.
func (r *rig) close(b *testing.B) {
	b.Helper()
	r.summarizer.Wait()
	r.responder.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.store.Close(ctx); err != nil {
		b.Error(err)
	}
}

// ---------------------------------------------------------------------------
// Fake model and senders

// fakeModel answers at once: chat replies and summaries come from pools of
// pre-generated text, in turn. onChat, when set, sees every chat prompt.
type fakeModel struct {
	replies   []string
	summaries []string
	onChat    func(msgs []llm.Message)

	chats, sums atomic.Int64
}

func (m *fakeModel) Chat(_ context.Context, msgs []llm.Message) (llm.Reply, error) {
	n := m.chats.Add(1)
	if m.onChat != nil {
		m.onChat(msgs)
	}
	return llm.Reply{Text: m.replies[int(n-1)%len(m.replies)], Model: "fake", FinishReason: "stop"}, nil
}

func (m *fakeModel) Summarize(_ context.Context, _ []llm.Message) (llm.Reply, error) {
	n := m.sums.Add(1)
	return llm.Reply{Text: m.summaries[int(n-1)%len(m.summaries)], Model: "fake", FinishReason: "stop"}, nil
}

// countingSender is a no-op transport that remembers the last message sent
// and counts them.
type countingSender struct {
	mu   sync.Mutex
	n    int
	last pipeline.Outbound
}

func (s *countingSender) Send(_ context.Context, out pipeline.Outbound) (string, error) {
	s.mu.Lock()
	s.n++
	s.last = out
	s.mu.Unlock()
	return "", nil
}

func (s *countingSender) state() (int, pipeline.Outbound) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.last
}

// warnings keeps the warnings and errors logged (the first few in full).
type warnings struct {
	mu    sync.Mutex
	n     int
	first []string
}

// logger returns a logger that records warnings and errors in w.
func (w *warnings) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Write receives one log record (slog handlers write each in one call).
func (w *warnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	if len(w.first) < 5 {
		w.first = append(w.first, strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d warnings/errors logged; first: %s", w.n, strings.Join(w.first, " | "))
}

func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// ---------------------------------------------------------------------------
// Timing wrappers

// latencies collects durations per conversation.
type latencies struct {
	mu  sync.Mutex
	per map[pipeline.Key][]time.Duration
}

func (l *latencies) add(k pipeline.Key, d time.Duration) {
	l.mu.Lock()
	if l.per == nil {
		l.per = map[pipeline.Key][]time.Duration{}
	}
	l.per[k] = append(l.per[k], d)
	l.mu.Unlock()
}

func (l *latencies) of(k pipeline.Key) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.per[k])
}

func (l *latencies) reset() {
	l.mu.Lock()
	l.per = nil
	l.mu.Unlock()
}

// timedAssembler times each prompt assembly and remembers the last prompt.
type timedAssembler struct {
	chat.Assembler
	lat  *latencies
	mu   sync.Mutex
	last assemble.Prompt
}

func (a *timedAssembler) Build(ctx context.Context, req assemble.Request) (assemble.Prompt, error) {
	start := time.Now()
	p, err := a.Assembler.Build(ctx, req)
	if a.lat != nil {
		a.lat.add(req.Key, time.Since(start))
	}
	a.mu.Lock()
	a.last = p
	a.mu.Unlock()
	return p, err
}

func (a *timedAssembler) lastPrompt() assemble.Prompt {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// timedStore times the responder's durable Append of the reply.
type timedStore struct {
	*memory.Store
	lat *latencies
}

func (s *timedStore) Append(ctx context.Context, msgs ...memory.Message) error {
	start := time.Now()
	err := s.Store.Append(ctx, msgs...)
	if len(msgs) > 0 {
		s.lat.add(msgs[0].Key, time.Since(start))
	}
	return err
}

// ---------------------------------------------------------------------------
// Statistics

// pct returns the p-th percentile (0 < p ≤ 1, nearest rank) of d.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func sum(d []time.Duration) time.Duration {
	var t time.Duration
	for _, x := range d {
		t += x
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ---------------------------------------------------------------------------
// Chat text

// functionWords head the vocabulary: the most frequent words of chat text.
// Most are stopwords (memory.Terms drops them), as in real text.
var functionWords = strings.Fields(`the i to you and a it is that of in my for on have be this was so but
just with me not what do we are at if can it's i'm don't your all he she they about there out up no yes
like know get got an or from as by will would could should been were them her him his our their then
than when how why which who now here well really very too much more some any ok thanks think going
want time good one day also did maybe still back need way even`)

// contentWords are what people talk about, roughly most common first.
var contentWords = strings.Fields(`work home people week today tomorrow yesterday night morning weekend
house family friend friends kids dog cat car phone money job boss meeting project school class
dinner lunch breakfast coffee tea food pizza pasta chicken salad beer wine water movie show music
song book game team match trip holiday flight train bus city beach mountain park weather rain sun
snow cold hot summer winter spring autumn birthday party wedding gift christmas doctor hospital
appointment sick headache medicine gym run running walk bike football tennis swimming yoga
computer laptop code bug server email message video photo picture camera app website update
plan plans idea problem question answer reason story news article paper report deadline budget
price rent bill bank card account shop store market delivery order package kitchen garden room
office desk chair window door key keys bag shoes jacket shirt dress hair teeth eye back knee
sister brother mother father mom dad son daughter wife husband girlfriend boyfriend grandma
grandpa uncle aunt cousin neighbour colleague client manager teacher student baby puppy kitten
garage roof floor wall paint furniture sofa bed sleep dream tired busy happy sad angry worried
excited stressed nervous bored hungry late early fast slow cheap expensive new old big small
long short easy hard nice great awful amazing funny weird strange quiet loud clean dirty broken
fixed ready free full empty open closed finished started moved bought sold paid called sent
booked cancelled missed forgot remembered learned taught cooked baked cleaned painted watched
played read wrote drove flew visited stayed left arrived lost found won tried decided changed
finish start move buy sell pay call send book cancel miss forget remember learn teach cook bake
clean watch play read write drive fly visit stay leave arrive lose find win try decide change
help ask tell talk speak listen hear feel look see meet bring take give keep hold turn carry
price hours minutes month year years months weeks days evening afternoon monday tuesday wednesday
thursday friday saturday sunday january february march april may june july august september
october november december lisbon porto paris london berlin madrid rome tokyo york barcelona
amsterdam brussels dublin vienna prague budapest warsaw athens istanbul cairo sydney boston
chicago seattle toronto vancouver mexico brazil spain france italy germany japan china india
portugal canada island lake river sea ocean forest village street road bridge airport station
hotel restaurant cafe bar museum theatre cinema concert festival exhibition library church
university college course exam test grade homework lesson lecture thesis research experiment
data database model chart spreadsheet document file folder backup password login account
version release feature issue ticket review merge branch deploy test tests build pipeline
cluster cloud network router wifi battery charger screen keyboard mouse printer speaker
headphones guitar piano drums violin band album concert lyrics podcast episode series season
novel poem author chapter recipe soup bread cake cookies chocolate cheese rice beans eggs milk
butter sugar salt pepper garlic onion tomato potato carrot apple banana orange lemon strawberry
grapes fish salmon tuna shrimp steak burger sandwich tacos sushi noodles curry dessert ice
cream snack fruit vegetables diet calories weight exercise training marathon race goal score
points player coach league season final champion medal trophy ticket tickets seat seats queue
traffic accident insurance police lawyer court contract lease landlord tenant mortgage loan
salary raise promotion interview resume career startup company business customer customers
sales marketing product design designer engineer developer manager director team teams
launch campaign strategy meeting meetings agenda notes slides presentation demo workshop
conference travel passport visa luggage suitcase hostel airbnb camping tent hiking trail
climbing skiing surfing sailing fishing boat kayak cycling garden plants flowers tree trees
grass vegetables tomatoes roses seeds soil compost birds bees chickens horse cow sheep goat
vet walkies leash collar treats vaccine allergy allergies cough fever flu cold pills dentist
glasses contact lenses surgery recovery therapy therapist anxiety stress mood energy focus
habit habits routine schedule calendar reminder alarm clock watch time zone jetlag nap
birthday anniversary gift present surprise card flowers cake candles balloons guests invite
invitation speech toast photos album memories childhood school friends reunion graduation
ceremony diploma job offer move moving boxes van apartment flat neighbourhood commute parking
petrol gas electric charger tesla bike scooter helmet lock repair mechanic tyres brakes engine
oil service warranty refund receipt return exchange complaint support chat bot assistant
language spanish french german italian portuguese japanese chinese english grammar vocabulary
words sentence translation accent lessons duolingo practice progress level fluent`)

// names are the people who chat and are talked about.
var names = strings.Fields(`Maria Tomás Ana João Sofia Rui Pedro Beatriz Carlos Marta Joana Diogo
Catarina Nuno Sara Tiago Rita Bruno Helena André Clara Paulo Teresa Hugo Leonor Filipe Alice Laura
Ricardo Mariana Vasco Daniel Anna Ben Chloe David Emma Felix Grace Hannah Ivan Julia Kenji Liam Mei
Noah Olga Priya Sam Yusuf Zoe`)

// vocabSize is how many distinct words the generator knows. Past the real
// words come made-up ones ("kelvaro"): the long tail of rare words (names of
// things, places, typos) that real chat has, so that common words are not
// over-represented in the search index.
const vocabSize = 20_000

// vocab is the whole vocabulary in rank order; word k is drawn with
// probability ∝ 1/(k+1)^1.07 (Zipf): the first 1,000 words make about 78% of
// the text, as in English.
var vocab = func() []string {
	v := append(append([]string(nil), functionWords...), contentWords...)
	seen := make(map[string]bool, vocabSize)
	for _, w := range v {
		seen[w] = true
	}
	r := rand.New(rand.NewPCG(5, 6))
	const cons, vows = "bcdfghjklmnprstvz", "aeiou"
	for len(v) < vocabSize {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
			if r.IntN(3) == 0 {
				b.WriteByte(cons[r.IntN(len(cons))])
			}
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			v = append(v, w)
		}
	}
	return v
}()

// textGen generates chat text deterministically from a seed.
type textGen struct {
	r    *rand.Rand
	zipf *rand.Zipf
}

func newTextGen(seed uint64) *textGen {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &textGen{r: r, zipf: rand.NewZipf(r, 1.07, 1, uint64(len(vocab)-1))}
}

// words returns n words of running text in sentences of 4–12 words; 3% of
// the word slots hold a name from people.
func (g *textGen) words(n int, people []string) string {
	var b strings.Builder
	start := true
	left := 0
	for i := 0; i < n; i++ {
		if left == 0 {
			left = 4 + g.r.IntN(9)
		}
		w := vocab[g.zipf.Uint64()]
		if len(people) > 0 && g.r.IntN(100) < 3 {
			w = people[g.r.IntN(len(people))]
		}
		if w == "i" || w == "i'm" {
			w = "I" + w[1:]
		}
		if start {
			r, size := utf8.DecodeRuneInString(w)
			w = string(unicode.ToUpper(r)) + w[size:]
			start = false
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		left--
		if left == 0 || i == n-1 {
			switch p := g.r.IntN(10); {
			case p < 7:
				b.WriteByte('.')
			case p < 9:
				b.WriteByte('?')
			default:
				b.WriteByte('!')
			}
			start = true
		}
	}
	return b.String()
}

// between returns a length in [lo, hi].
func (g *textGen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// ---------------------------------------------------------------------------
// The turn fixture: one conversation with 100,000 archived messages

const (
	turnFixtureName = "recall-bench-turn-v1" // bump when the content changes
	fxArchived      = 100_000                // archived messages of the big conversation
	fxChunk         = 20                     // messages per archived chunk: 10 exchanges, one summary each
	fxActiveSums    = 10                     // the newest level-1 summaries stay active
	fxActive        = 30                     // active messages after the archive
	fxTxRows        = 10_000
)

var (
	bigKey  = pipeline.Key{Channel: "telegram", Chat: "424242"} // a private chat: chat id = user id
	bigUser = "424242"
	bigName = "Ana"
	// bigPeople are who Ana and the assistant talk about. Ana's own name is
	// not among them: it is the sender name of half the archive, so a
	// message that mentions it matches every message she wrote.
	bigPeople = []string{"João", "Sofia", "Rui", "Helena", "Kenji"}
)

// turnFixture returns the path of the cached fixture database, building it
// first when it is missing (about half a minute: FTS5 indexing runs at a few
// thousand rows/s). It lives in $TMPDIR/recall-bench-turn-v1/recall.db; it
// is built under a temporary name and renamed when complete, so an
// interrupted build is never used. Delete the folder to rebuild it. Callers
// copy it: the benchmarks change the conversation.
func turnFixture(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), turnFixtureName)
	final := filepath.Join(dir, "recall.db")
	if _, err := os.Stat(final); err == nil {
		return final
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	tmp := filepath.Join(dir, fmt.Sprintf("building-%d.db", os.Getpid()))
	removeDB := func(p string) {
		for _, s := range []string{"", "-wal", "-shm", "-journal"} {
			_ = os.Remove(p + s)
		}
	}
	removeDB(tmp)
	start := time.Now()
	fmt.Fprintf(os.Stderr, "building the turn fixture (%d archived messages) in %s, once\n", fxArchived, dir)
	if err := buildTurnFixture(context.Background(), tmp); err != nil {
		removeDB(tmp)
		b.Fatalf("building the fixture: %v", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		removeDB(tmp)
		b.Fatal(err)
	}
	removeDB(tmp) // leftovers (-wal, -shm) of the build name
	fmt.Fprintf(os.Stderr, "built the turn fixture in %s\n", time.Since(start).Round(time.Second))
	return final
}

// estimateTokens approximates tokens as ceil(runes/4) for the fixture rows
// (the real tokenizer would triple the build time; new messages are counted
// by the real counter as usual).
func estimateTokens(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

// buildTurnFixture writes, with raw batched INSERTs into memory's schema
// (the FTS triggers fire as for the writer): the big conversation's
// 100,000 archived messages in chunks of 20, one level-1 summary per chunk
// (the newest 10 active, the older ones inactive as if folded), then 30
// active messages whose 15 replies count toward the next summary.
func buildTurnFixture(ctx context.Context, path string) error {
	s, err := memory.OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	db := s.DB()
	if _, err := db.ExecContext(ctx, `PRAGMA cache_size = -131072`); err != nil { // 128 MiB for the build
		return err
	}
	g := newTextGen(7)
	total := fxArchived + fxActive
	chunks := fxArchived / fxChunk
	now := time.Now().Truncate(time.Hour)
	t0 := now.Add(-2 * 365 * 24 * time.Hour)
	gap := now.Add(-time.Hour).Sub(t0) / time.Duration(total)

	var conv int64
	if err := db.QueryRowContext(ctx, `INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, ?) RETURNING id`,
		bigKey.String(), bigKey.Owner(), t0.UnixMilli()).Scan(&conv); err != nil {
		return err
	}
	const insMsg = `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	const insSum = `INSERT INTO summaries(conv, level, text, is_active, sources, from_at, to_at, tokens, created_at)
		VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)`
	var (
		tx       *sql.Tx
		ins, sum *sql.Stmt
	)
	begin := func() error {
		var err error
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			return err
		}
		if ins, err = tx.PrepareContext(ctx, insMsg); err != nil {
			return err
		}
		sum, err = tx.PrepareContext(ctx, insSum)
		return err
	}
	commit := func() error {
		ins.Close()
		sum.Close()
		return tx.Commit()
	}
	if err := begin(); err != nil {
		return err
	}
	var chunkFrom time.Time
	var lastSum time.Time
	turns := 0
	for i := 0; i < total; i++ {
		at := t0.Add(time.Duration(i) * gap)
		role, senderID, sender, replyTo, text := memory.RoleUser, "", "", "", ""
		pid := strconv.Itoa(i + 1)
		if i%2 == 0 {
			senderID, sender = bigUser, bigName
			text = g.words(g.between(3, 30), bigPeople)
		} else {
			role, replyTo = memory.RoleAssistant, strconv.Itoa(i)
			text = g.words(g.between(12, 80), bigPeople)
		}
		active, chunk := 1, int64(0)
		if i < fxArchived {
			active, chunk = 0, int64(i/fxChunk+1)
			if i%fxChunk == 0 {
				chunkFrom = at
			}
		} else if role == memory.RoleAssistant {
			turns++
		}
		if _, err := ins.ExecContext(ctx, conv, string(role), senderID, sender, pid, replyTo, text,
			at.UnixMilli(), estimateTokens(text), active, chunk); err != nil {
			tx.Rollback()
			return err
		}
		if chunk > 0 && i%fxChunk == fxChunk-1 {
			st := g.words(g.between(60, 110), bigPeople)
			sumActive := 0
			if int(chunk) > chunks-fxActiveSums {
				sumActive = 1
			}
			lastSum = at.Add(time.Minute)
			if _, err := sum.ExecContext(ctx, conv, st, sumActive, "["+strconv.FormatInt(chunk, 10)+"]",
				chunkFrom.UnixMilli(), at.UnixMilli(), estimateTokens(st), lastSum.UnixMilli()); err != nil {
				tx.Rollback()
				return err
			}
		}
		if (i+1)%fxTxRows == 0 {
			if err := commit(); err != nil {
				return err
			}
			if err := begin(); err != nil {
				return err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET next_chunk = ?, turns_since_summary = ?, last_summary_at = ? WHERE id = ?`,
		chunks+1, turns, lastSum.UnixMilli(), conv); err != nil {
		tx.Rollback()
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	var n, archived, sums int
	if err := db.QueryRowContext(ctx, `SELECT count(*), sum(is_active = 0), (SELECT count(*) FROM summaries WHERE is_active = 1) FROM messages`).Scan(&n, &archived, &sums); err != nil {
		return err
	}
	if n != total || archived != fxArchived || sums != fxActiveSums {
		return fmt.Errorf("fixture has %d messages (%d archived) and %d active summaries; want %d (%d), %d", n, archived, sums, total, fxArchived, fxActiveSums)
	}
	return s.Checkpoint(ctx)
}

// copyFile copies the fixture database so a benchmark can change it.
func copyFile(b *testing.B, src, dst string) {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}
