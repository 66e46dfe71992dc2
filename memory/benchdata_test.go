package memory

// Data for the benchmarks in bench_test.go: a Zipf-distributed chat text
// generator, the cached 1M-message fixture, and the planted-facts conversation
// of BenchmarkRetrievalQuality.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/recallbot/recall/pipeline"
)

// benchFunctionWords head the vocabulary: the most frequent words of chat
// text, roughly in frequency order. Every one is a stopword (Terms drops it),
// so the index holds them but no query ever searches for them.
var benchFunctionWords = strings.Fields(`the i to you and a it is that of in my for on have be this was so
but just with me not what do we are at if can it's i'm don't your all he she they about there out up no
yes yeah like know get got an or from as by will would could should been were them her him his our their
then than when how why which who now here well really very too much more some any ok thanks`)

// benchNames are the people who chat and are talked about.
var benchNames = strings.Fields(`Maria Tomás Ana João Sofia Rui Pedro Beatriz Carlos Marta Joana Diogo
Catarina Nuno Sara Tiago Rita Bruno Helena André Clara Paulo Teresa Hugo Leonor Filipe Alice Gonçalo Laura
Ricardo Mariana Vasco Patrícia Daniel Anna Ben Chloe David Emma Felix Grace Hannah Ivan Julia Kenji Liam Mei
Noah Olga Priya Sam Yusuf Zoe`)

// benchVocab is the whole vocabulary in rank order: function words, then
// content words. Rank k is drawn with probability ∝ 1/(k+1)^1.05.
var benchVocab = append(append([]string(nil), benchFunctionWords...), benchContentWords...)

// benchText generates chat text deterministically from a seed.
type benchText struct {
	r    *rand.Rand
	zipf *rand.Zipf
}

func newBenchText(seed uint64) *benchText {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &benchText{r: r, zipf: rand.NewZipf(r, 1.05, 1, uint64(len(benchVocab)-1))}
}

// word draws one word of running text.
func (g *benchText) word() string { return benchVocab[g.zipf.Uint64()] }

// contentWord draws a word a user would search for: the same Zipf
// distribution restricted to content words.
func (g *benchText) contentWord() string {
	for {
		if k := g.zipf.Uint64(); int(k) >= len(benchFunctionWords) {
			return benchVocab[k]
		}
	}
}

// sentence is n words; with probability 3% a word slot holds a name.
func (g *benchText) sentence(n int, names []string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		w := g.word()
		if len(names) > 0 && g.r.IntN(100) < 3 {
			w = names[g.r.IntN(len(names))]
		}
		if w == "i" || w == "i'm" {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if i == 0 {
			r, size := utf8.DecodeRuneInString(w)
			w = string(unicode.ToUpper(r)) + w[size:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if i > 4 && i < n-3 && g.r.IntN(12) == 0 {
			b.WriteByte(',')
		}
	}
	switch p := g.r.IntN(10); {
	case p < 7:
		b.WriteByte('.')
	case p < 9:
		b.WriteByte('?')
	default:
		b.WriteByte('!')
	}
	return b.String()
}

// message is a chat message: users write 3–22 words, the assistant 12–56,
// in one to three sentences.
func (g *benchText) message(role Role, names []string) string {
	n := 3 + g.r.IntN(20)
	if role == RoleAssistant {
		n = 12 + g.r.IntN(45)
	}
	var parts []string
	for n > 0 {
		k := n
		if n > 8 && g.r.IntN(2) == 0 {
			k = 4 + g.r.IntN(n-6)
		}
		parts = append(parts, g.sentence(k, names))
		n -= k
	}
	return strings.Join(parts, " ")
}

// query is what a user might search the archive for: 1–4 content words,
// one in ten with a person's name.
func (g *benchText) query(names []string) string {
	n := 1 + g.r.IntN(4)
	words := make([]string, n)
	for i := range words {
		words[i] = g.contentWord()
	}
	if len(names) > 0 && g.r.IntN(10) == 0 {
		words[g.r.IntN(n)] = names[g.r.IntN(len(names))]
	}
	return strings.Join(words, " ")
}

// benchHostileQueries are inputs that must neither break nor stall search.
func benchHostileQueries() []string {
	g := newBenchText(99)
	var paste []string
	for len(paste) < 3000 {
		paste = append(paste, g.word())
	}
	return []string{
		`"unbalanced quote AND OR NOT (`,
		`conv:c1 OR * NEAR(time work, 2) ^first`,
		`'; DROP TABLE messages; --`,
		`%_% \% [a-z]* _`,
		`🙂🙂🙂 ¿¿?? … — «»`,
		`what is it that you were about to do with them`,                       // stopwords only
		strings.Repeat("time ", 2000),                                          // one word 2,000 times
		strings.Join(paste, " "),                                               // a pasted page of text: 32 terms
		strings.Repeat("x", 5000) + " " + strings.Repeat("long", 40) + " work", // over-long "words"
		`Maria Tomás Ana João Sofia Rui`,                                       // names only
	}
}

// The cached 1M-message fixture.
const (
	bigFixtureName  = "recall-bench-1m-v1" // bump when the fixture's content changes
	bigTotal        = 1_000_000
	bigArchived     = 100_000 // archived messages of the big conversation
	bigTail         = 40      // its active tail
	smallTotal      = 100     // the small conversation: 80 archived, 20 active
	smallTail       = 20
	otherConvs      = 900 // conversations sharing the rest, besides big and small
	benchChunkSize  = 40  // messages per archived chunk (one level-1 summary each)
	fixtureTxRows   = 10_000
	fixtureProgress = 100_000
)

var (
	bigKey     = pipeline.Key{Channel: "telegram", Chat: "big"}
	smallKey   = pipeline.Key{Channel: "telegram", Chat: "small"}
	bigPeople  = []string{"Ana", "João", "Sofia", "Rui", "Helena", "Kenji"}
	fixtureT0  = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	fixtureGap = 30 * time.Second // between consecutive messages of the whole store
)

// bigFixtureDir returns the folder of the cached fixture database
// (recall.db), building it first when it is missing. The build takes a few
// minutes (FTS5 indexing runs at roughly 7k rows/s) and is done once per
// machine: the result is kept in $TMPDIR/recall-bench-1m-v1/. Delete that
// folder to rebuild it; it is also rebuilt when a migration changes (see
// fixtureStamp). The database is built under a temporary name and renamed
// when complete, so an interrupted build is never reused.
func bigFixtureDir(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), bigFixtureName)
	final := filepath.Join(dir, "recall.db")
	stampFile := filepath.Join(dir, "schema.stamp")
	stamp := fixtureStamp()
	removeDB := func(p string) {
		for _, s := range []string{"", "-wal", "-shm", "-journal"} {
			_ = os.Remove(p + s)
		}
	}
	if _, err := os.Stat(final); err == nil {
		if got, _ := os.ReadFile(stampFile); string(got) == stamp {
			return dir
		}
		fmt.Fprintf(os.Stderr, "the cached fixture was built with other migrations: rebuilding\n")
		removeDB(final)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "building-*"))
	for _, p := range stale { // interrupted builds
		_ = os.Remove(p)
	}
	tmp := filepath.Join(dir, fmt.Sprintf("building-%d.db", os.Getpid()))
	start := time.Now()
	fmt.Fprintf(os.Stderr, "building the 1M-message fixture in %s (a few minutes, once)\n", dir)
	if err := buildBigFixture(context.Background(), tmp); err != nil {
		removeDB(tmp)
		b.Fatalf("building the fixture: %v", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		removeDB(tmp)
		b.Fatal(err)
	}
	if err := os.WriteFile(stampFile, []byte(stamp), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Logf("built the 1M-message fixture in %s", time.Since(start).Round(time.Second))
	return dir
}

// fixtureStamp identifies the fixture's content and schema: a change to the
// generator (bigFixtureName) or to any migration rebuilds the fixture.
func fixtureStamp() string {
	h := sha256.New()
	h.Write([]byte(bigFixtureName))
	h.Write([]byte(searchIndexFormat)) // what the triggers index (search_index.go)
	names, _ := fs.Glob(migrationFiles, "migrations/*.sql")
	sort.Strings(names)
	for _, n := range names {
		body, _ := migrationFiles.ReadFile(n)
		h.Write([]byte(n))
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

type fixtureConv struct {
	id        int64
	key       pipeline.Key
	total     int // messages
	archived  int // the first archived messages are archived in chunks of 40
	people    []string
	n         int // messages written so far
	lastUser  string
	chunkFrom time.Time
	turns     int // active assistant messages
	lastSum   time.Time
}

// fixtureConvs lays out the conversations: big, small, and 900 others whose
// sizes are skewed (exponentially distributed) around 1,000 messages.
func fixtureConvs(r *rand.Rand) []*fixtureConv {
	convs := []*fixtureConv{
		{key: bigKey, total: bigArchived + bigTail, archived: bigArchived, people: bigPeople},
		{key: smallKey, total: smallTotal, archived: smallTotal - smallTail, people: []string{"Marta", "Nuno"}},
	}
	rest := bigTotal - convs[0].total - convs[1].total
	weights := make([]float64, otherConvs)
	sum := 0.0
	for i := range weights {
		weights[i] = r.ExpFloat64() + 0.05
		sum += weights[i]
	}
	left := rest
	channels := []string{"telegram", "telegram", "whatsapp", "console"}
	for i := range weights {
		n := max(2, int(float64(rest)*weights[i]/sum))
		if i == len(weights)-1 {
			n = left
		}
		left -= n
		people := make([]string, 1+r.IntN(4))
		for j := range people {
			people[j] = benchNames[r.IntN(len(benchNames))]
		}
		tail := min(n, 2+r.IntN(40))
		convs = append(convs, &fixtureConv{
			key:   pipeline.Key{Channel: channels[i%len(channels)], Chat: strconv.Itoa(100000 + i)},
			total: n, archived: n - tail, people: people,
		})
	}
	return convs
}

func buildBigFixture(ctx context.Context, path string) error {
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	db := s.DB()
	if _, err := db.ExecContext(ctx, `PRAGMA cache_size = -65536`); err != nil { // 64 MiB: a connection may use 256 MiB in all
		return err
	}
	r := rand.New(rand.NewPCG(1, 2))
	g := newBenchText(3)
	convs := fixtureConvs(r)
	// Which conversation each message of the store belongs to, in time order.
	seq := make([]uint16, 0, bigTotal)
	for i, c := range convs {
		for j := 0; j < c.total; j++ {
			seq = append(seq, uint16(i))
		}
	}
	if len(seq) != bigTotal {
		return fmt.Errorf("fixture layout has %d messages, want %d", len(seq), bigTotal)
	}
	r.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, c := range convs {
		if err := tx.QueryRowContext(ctx, `INSERT INTO conversations(key, owner, created_at) VALUES (?, ?, ?) RETURNING id`,
			c.key.String(), c.key.Owner(), fixtureT0.UnixMilli()).Scan(&c.id); err != nil {
			return err
		}
	}
	// Rows go in 1,000 per statement (INSERT … SELECT FROM json_each): FTS5
	// flushes its pending terms to disk at every statement savepoint, so
	// one statement per row would make a tiny index segment per row (and
	// the build three to four times slower, slowing as the index grows).
	const insMsg = `INSERT INTO messages(conv, role, sender_id, sender_name, platform_id, reply_to, text, created_at, tokens, is_active, chunk_id)
		SELECT value->>'$[0]', value->>'$[1]', value->>'$[2]', value->>'$[3]', value->>'$[4]', value->>'$[5]',
			value->>'$[6]', value->>'$[7]', value->>'$[8]', value->>'$[9]', value->>'$[10]'
		FROM json_each(?) ORDER BY key`
	const insSum = `INSERT INTO summaries(conv, level, text, is_active, sources, from_at, to_at, tokens, created_at)
		SELECT value->>'$[0]', 1, value->>'$[1]', 1, value->>'$[2]', value->>'$[3]', value->>'$[4]', value->>'$[5]', value->>'$[6]'
		FROM json_each(?) ORDER BY key`
	var ins, sum *sql.Stmt
	prepare := func() error {
		var err error
		if ins, err = tx.PrepareContext(ctx, insMsg); err != nil {
			return err
		}
		sum, err = tx.PrepareContext(ctx, insSum)
		return err
	}
	if err := prepare(); err != nil {
		return err
	}
	var msgRows, sumRows [][]any
	flush := func() error {
		if len(msgRows) > 0 {
			js, _ := json.Marshal(msgRows)
			if _, err := ins.ExecContext(ctx, string(js)); err != nil {
				return err
			}
		}
		if len(sumRows) > 0 {
			js, _ := json.Marshal(sumRows)
			if _, err := sum.ExecContext(ctx, string(js)); err != nil {
				return err
			}
		}
		msgRows, sumRows = msgRows[:0], sumRows[:0]
		return nil
	}
	start := time.Now()
	for i, ci := range seq {
		c := convs[ci]
		at := fixtureT0.Add(time.Duration(i)*fixtureGap + time.Duration(r.IntN(20000))*time.Millisecond)
		role, sender, senderID, replyTo := RoleUser, "", "", ""
		pid := strconv.Itoa(i + 1)
		if c.n%2 == 0 {
			p := r.IntN(len(c.people))
			sender, senderID = c.people[p], strconv.Itoa(1000+p)
			c.lastUser = pid
		} else {
			role, replyTo = RoleAssistant, c.lastUser
		}
		text := g.message(role, c.people)
		active, chunk := 1, int64(0)
		if c.n < c.archived {
			active, chunk = 0, int64(c.n/benchChunkSize+1)
			if c.n%benchChunkSize == 0 {
				c.chunkFrom = at
			}
		} else if role == RoleAssistant {
			c.turns++
		}
		msgRows = append(msgRows, []any{c.id, string(role), senderID, sender, pid, replyTo, text,
			at.UnixMilli(), estimateTokens(text), active, chunk})
		if chunk > 0 && (c.n%benchChunkSize == benchChunkSize-1 || c.n == c.archived-1) {
			st := "Summary: " + g.message(RoleAssistant, c.people)
			c.lastSum = at.Add(time.Minute)
			sumRows = append(sumRows, []any{c.id, st, "[" + strconv.FormatInt(chunk, 10) + "]",
				c.chunkFrom.UnixMilli(), at.UnixMilli(), estimateTokens(st), c.lastSum.UnixMilli()})
		}
		c.n++
		if (i+1)%1000 == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		if (i+1)%fixtureTxRows == 0 {
			ins.Close()
			sum.Close()
			if err := tx.Commit(); err != nil {
				return err
			}
			if tx, err = db.BeginTx(ctx, nil); err != nil {
				return err
			}
			if err := prepare(); err != nil {
				return err
			}
		}
		if (i+1)%fixtureProgress == 0 {
			el := time.Since(start)
			fmt.Fprintf(os.Stderr, "  fixture: %d/%d messages, %s, %.0f rows/s\n", i+1, bigTotal,
				el.Round(time.Second), float64(i+1)/el.Seconds())
		}
	}
	if err := flush(); err != nil {
		return err
	}
	for _, c := range convs {
		last := int64(0)
		if !c.lastSum.IsZero() {
			last = c.lastSum.UnixMilli()
		}
		chunks := (c.archived + benchChunkSize - 1) / benchChunkSize
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET next_chunk = ?, turns_since_summary = ?, last_summary_at = ? WHERE id = ?`,
			chunks+1, c.turns, last, c.id); err != nil {
			return err
		}
	}
	ins.Close()
	sum.Close()
	if err := tx.Commit(); err != nil {
		return err
	}
	if err := s.Checkpoint(ctx); err != nil {
		return err
	}
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		return err
	}
	if n != bigTotal {
		return errors.New("fixture: wrong message count " + strconv.FormatInt(n, 10))
	}
	return nil
}

// benchFact is a fact planted in BenchmarkRetrievalQuality's conversation, and
// the question a user asks about it later. Questions name the person and say
// the same thing in other words, the way people ask; some share nothing with
// the fact but a name (marked "names only").
type benchFact struct {
	Speaker  string
	Text     string
	Question string
}

var benchFacts = []benchFact{
	{"Maria", "Big news from the family: my sister Elena moved to Porto in March, she says the light there is unreal.", "Where is Maria's sister living now, did Elena relocate?"},
	{"Tomás", "We adopted a greyhound last week, he's called Biscuit and he sleeps about twenty hours a day.", "What's the name of the dog Tomás is adopting?"},
	{"Maria", "I finally passed my driving test, third attempt, the examiner even smiled.", "Did Maria ever pass her driver's license exam?"},
	{"Tomás", "Careful with the paella on Saturday, I'm allergic to shellfish, prawns make my throat swell.", "Which seafood is Tomás allergic to?"},
	{"Maria", "My grandmother turns ninety next Sunday, we're throwing her a surprise party in Braga.", "When is Maria's grandma's birthday party?"},
	{"Tomás", "I switched jobs, I'm now a sound engineer at a theatre in Lisbon.", "Where does Tomás work these days?"}, // names only
	{"Maria", "I broke my wrist snowboarding in Andorra in January, the cast comes off soon.", "How did Maria injure her wrist?"},
	{"Tomás", "My son Rafael started cello lessons this autumn, the neighbours are being patient.", "What instrument is Rafael learning to play?"},
	{"Maria", "I signed up for the Berlin marathon in September, so I'm training every morning before work.", "Which marathon is Maria running?"},
	{"Tomás", "The flat in Alfama flooded last night, a pipe burst in the apartment upstairs.", "What happened with the flooding at Tomás's place?"},
	{"Maria", "I'm vegetarian now, haven't eaten meat since the summer.", "Does Maria still eat meat?"},
	{"Maria", "Tomás told me his brother Duarte is getting married in Sintra in June.", "When is the wedding of Tomás's brother?"},
	{"Maria", "I bought a secondhand Vespa, it's mint green and it only starts downhill.", "What color is Maria's scooter?"}, // names only
	{"Tomás", "I'm learning Japanese because we're visiting Kyoto next spring.", "Why is Tomás studying Japanese, is he going to visit Japan?"},
	{"Maria", "Pimenta had three kittens under my bed this morning!", "How many kittens did Maria's cat have?"},
	{"Tomás", "Four months without a cigarette today, I quit smoking in November.", "Has Tomás stopped smoking?"},
	{"Maria", "I got promoted to head of the design team, starting Monday.", "What's Maria's new position after her promotion?"},
	{"Tomás", "My father had knee surgery on Tuesday and he's recovering at home now.", "How is Tomás's dad recovering from the operation?"},
	{"Maria", "We're renovating the kitchen, the new countertops are oak.", "What are Maria's renovation plans for the kitchen?"},
	{"Tomás", "I sold my old Fender guitar to pay for the trip to Cape Verde.", "Why did Tomás sell his guitar?"},
	{"Maria", "Elena is expecting twins in August!", "Is Maria going to be an aunt?"}, // names only
	{"Tomás", "Money is tight so I cancelled the gym membership.", "Did Tomás cancel his gym subscription?"},
	{"Maria", "My landlord is raising the rent by two hundred euros from May.", "How much is Maria's rent going up?"},
	{"Tomás", "I've been volunteering at the animal shelter on Saturdays.", "Where does Tomás volunteer on weekends?"},
	{"Maria", "I'm reading all of Saramago, halfway through Blindness right now.", "Which author has Maria been reading lately?"},
	{"Tomás", "Our band is playing at the Musicbox on the 14th, come if you can.", "When is Tomás's band performing?"},
	{"Maria", "I lost my passport at Madrid airport, the consulate appointment is on Friday.", "Where did Maria lose her passport?"},
	{"Tomás", "My daughter Inês got into medical school in Coimbra!", "Which university accepted Inês?"},
	{"Maria", "I'm terrified of flying, so we're taking the train to Paris.", "How is Maria getting to Paris, is she scared of planes?"},
	{"Tomás", "I started baking sourdough, the starter is named Gertrude.", "What did Tomás call his sourdough starter?"},
	{"Maria", "The neighbour's dog bit me on the ankle last week.", "Was Maria bitten by a dog?"},
	{"Tomás", "I'm colour blind, red and green look the same to me.", "Is Tomás color-blind?"},
	{"Maria", "We planted an olive tree in the garden for my mother's birthday.", "What tree did Maria plant for her mom?"},
	{"Tomás", "The doctor says I have type 2 diabetes, so no more sugar in my coffee.", "What illness does Tomás have?"}, // names only
	{"Maria", "I won the photography contest with my picture of the lighthouse.", "What did Maria's winning photo show?"},
	{"Tomás", "I'm moving to Rotterdam in the autumn, the port authority offered me a job.", "Why is Tomás relocating to the Netherlands?"}, // names only
	{"Maria", "My laptop died, so I'm using my brother Miguel's old one for now.", "Whose computer is Maria borrowing?"},                    // names only
	{"Tomás", "I got a tattoo of a swallow on my forearm, my mum hasn't seen it yet.", "What tattoo did Tomás get?"},
	{"Maria", "I'm taking salsa lessons on Thursday nights.", "What kind of dance classes is Maria taking?"},
	{"Tomás", "My grandfather was a fisherman in Nazaré all his life.", "What did Tomás's grandpa do for a living?"},
	{"Maria", "I have a peanut allergy, I always carry an EpiPen.", "Does Maria have any food allergies?"},
	{"Tomás", "We're saving for a house in Setúbal, hopefully next year.", "Is Tomás buying a home in Setúbal?"},
	{"Maria", "I can't stand coriander, it tastes like soap to me.", "Which herb does Maria dislike?"}, // names only
	{"Tomás", "My car got towed outside the stadium after the Benfica match.", "Why was Tomás's car towed away?"},
	{"Maria", "I'm writing a children's book about a penguin who can't swim.", "What is Maria's book about?"},
	{"Tomás", "I climbed Mount Pico in the Azores, it took nine hours.", "Which mountain did Tomás climb?"},
	{"Tomás", "Maria and Elena are opening a bakery together in the spring, I already ordered a cake.", "What business are Maria and Elena starting?"},
	{"Tomás", "I keep having nightmares since the car accident.", "Is Tomás still having bad dreams after the crash?"},
	{"Maria", "I speak four languages: Portuguese, French, German and a bit of Swahili.", "How many languages does Maria speak?"},
	{"Tomás", "My mother is retiring after forty years as a schoolteacher.", "When does Tomás's mum retire?"},
}

// qualityKey is the conversation of BenchmarkRetrievalQuality.
var qualityKey = pipeline.Key{Channel: "telegram", Chat: "4242"}

// qualityConversation builds a long chat between Maria and Tomás (and the
// bot): filler turns from the Zipf vocabulary, which mention their family
// and friends too, with every fact of benchFacts planted once at a random
// place. planted[i] is the index in the returned messages of fact i.
func qualityConversation(filler int) (msgs []Message, planted []int) {
	g := newBenchText(42)
	r := rand.New(rand.NewPCG(7, 8))
	people := []string{"Maria", "Tomás"}
	mentioned := []string{"Maria", "Tomás", "Elena", "Rafael", "Duarte", "Inês", "Miguel", "Ana", "João", "Pedro"}
	at := map[int]int{} // filler position → fact
	for i := range benchFacts {
		for {
			p := 20 + r.IntN(filler-40)
			if _, taken := at[p]; !taken {
				at[p] = i
				break
			}
		}
	}
	planted = make([]int, len(benchFacts))
	t := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	add := func(role Role, sender, text string) {
		t = t.Add(time.Duration(1+r.IntN(600)) * time.Second)
		m := Message{Key: qualityKey, Role: role, SenderName: sender, Text: text, Time: t,
			PlatformID: strconv.Itoa(len(msgs) + 1)}
		if role == RoleUser {
			m.SenderID = strconv.Itoa(len(sender))
		}
		msgs = append(msgs, m)
	}
	for i := 0; i < filler; i++ {
		if f, ok := at[i]; ok {
			planted[f] = len(msgs)
			add(RoleUser, benchFacts[f].Speaker, benchFacts[f].Text)
		}
		if r.IntN(100) < 15 {
			add(RoleAssistant, "", g.message(RoleAssistant, mentioned))
		} else {
			add(RoleUser, people[r.IntN(2)], g.message(RoleUser, mentioned))
		}
	}
	return msgs, planted
}

// benchContentWords are 3,000 English words in rough order of frequency: the
// whole-word, dictionary-checked entries of the GPT-2 BPE vocabulary in merge
// order, stopwords and offensive words removed.
var benchContentWords = strings.Fields(`
one said man year part time new people work play first act bet two back may add need see use
make every look years right way call end long think set show say good start made last count
point used game report world though take going hand ear high help found person great sign run
follow find team system lead around car law read real support fact day three met says public war
power different state head another child since life develop pass turn second something month
government without leg put never level art things might effect allow feel result lot fun using
big ask best number must direct open post come seem week far place form told stand next little
mark information bus invest hard import test rest full care case less list top home left better
data attack build main including interest keep class small plan percent camp pay process program
name four return called move group men current always women old near free design change book
away able country order million thing school days health already friend least talk later view
word cost enough give large win important business clear expect kind mean past perform story
season claim came within line project control air money family making bit police happen sit sure
appear light water times grow company example actually ever tax major often human job available
record sing news following hour become took product means certain deal side reason elect
official possible hold city children night done working body whether author proper seen course
event pot short press protect thought question several given fund went meet games understand
makes love complete account others young along according yet members among employ low likely
president access known early fight sent today market based strong problem social campaign months
five players success present particular try suggest land local political asked former close
getting across believe together individual face value area key mom anything experience mind
future cut video net connect amount either fail special black looking fire almost study miss
community media food comes single half started quick issue else consider taken true ago added
bad similar character reported type entire history live trying discuss self room fall idea sound
someone object player rather service nothing provide party exist house behind however sum
function front series points specific previous custom court whole treat probably learn version
check super address field common begin bring action wanted attempt due shall six step stop hours
create national taking red research break space recent general hit period everything saying
include position pick matter relations bar ground security concern white seems watch wind mass
pack outside pain foot third evidence threat item represent significant simply longer file upon
coming quite difficult woman text require military review subject instead issues minutes code
higher page students method policy accept words final changes friends respect damage total needs
development age results gun rights running port rate pretty target saw works everyone pie block
walk shows site risk began size decision continue parent easy drug sense energy girl request
soon host states material moment especially services role office track heart ball personal
building increase needed lost became groups wrote prop inside wrong statement film music share
release forward stay original card favor cases section leave required countries questions cell
shoot anyone affect online ability content force sold soft companies article playing held
released federal interview install received source serious created cause late speak legal weeks
model exact takes regard price problems leaders deep contract relationship base potential link
lower contact ill mother provided average exam perfect buy shot collect played officials simple
industry hands pull round user range private ways except terms performance bill environment
worth chance speed match living response enjoy via member tool offer turned recently blood hope
comment gave select goes impact boy felt expected image prevent involved eyes quickly led candid
earlier focus popular various levels road heard users improve father search profess knew loss
events billion cover areas gets vote nearly included happened hot whose civil respond features
economic technology option training effects fast occur website email oil currently goal decided
travel mention election phone looks situation quality table staff tried addition box lack wide
board slow path worked pen engine looked victim property color network date extra reports
capital command allowed numbers fair reach broad couple screen lives prior approach built rules
financial considered brought products visit document conduct completely written draw published
secret standard arm fell foreign regular increased usually dark additional production race huge
town attention terror meeting arrest fear extreme workers directly population cross message
nation poll answer carry hear natural dog trade multiple fans sort global language necessary
details medical receive morning bank sat device safe systems assist battle paper growth cast
plans parts wall movement practice display sometimes son avoid towards talking correct spent
term wants forces ones immediately parents shown conditions stuff includes announced described
door changed clean club paid attacks characters alone director load finally exactly nature
career latest weight note teams hundred consist ten costs normal obvious star ready implement
song interesting giving middle remember demand treatment danger guy physical related remain
refer easily uses write leader reading designed appears choice particularly allows difference
although relative application society poor writing seven starting print gives cool thinking save
limited meaning nice gas eight feet effort brain touch studies center computer increasing store
comments doll wife laws modern opportunity powerful claims title beyond sell violence compared
options throughout files detail piece named education drive items student throw scene complex
concept status died knowledge beginning certainly guys slight fine fat perhaps income majority
greater feed safety unique gone showed counter leading send defense continued provides prison
happy economy trust weapons analysis science figure software officers remains cat stage enter
passed despite movie voice toward region values mount officer lay pressure books reasons
activity calls letter choose types platform quarter maybe moving gold patients truth charge rock
credit moved names straight feature rule click aware pattern associated style stories
individuals summer fully followed jobs seemed reality lines park measure brother growing cry
rates positive culture map coach kids journal false web sleep contain bed meant notice favorite
condition purpose organization critic larger actions kept aim benefits actual vehicle chief
efforts wait adult overall speech highly female error effective failed programs ahead crime
location behavior rare caused ship active green reflect firm birth clearly agency memory biggest
rap basic band suspect spread absolute places cards destroy appeared beg temper length blog
resources spot forced thousands generally drink thus eye college ensure apparent religious minor
primary developed peace skin blue families apply inform limit resist hair eventually helped fit
sales seconds strength feeling tour knows spokes ideas launch bottom script rat whatever mode
agree sources initial restrict wonder burn reached sun cook male climate fix alleged images
schools drop stream previously pet double default rank weapon stock picture century citizens
onto expand hero wild update customers criminal leaving otherwise basis recommend floor crowd
central dream download window happens unit tend becomes fighting predict heavy fan spend
football transfer therefore mission noted disease edit progress adding raised seeing agreement
server debate supposed largest successful jump owners offers shooting defend beat records
employees devices benefit surface harm shut lose challenge station intelligence requires
hospital spirit offered produce creating ended daily voters smart extremely opinion gain useful
budget comfort background episode enemy trial establish continues showing posted eat rise signed
grand projects conference responsible learned returned brief brand highest train incident
nuclear charges adjust earth prices draft runs candidate management teach separate instance
unless operations faith activities traditional direction machine surround push easier argument
spending theory calling influence commit photo wish revealed enforce miles interested solution
removed plant achieve advantage slightly placed mostly negative setting produced connection
driver executive assault born structure reduce decades league join die assess goals senior
parties learning street camera skills existing willing critical serve cold species animals older
teacher prefer thread manager professional notes fresh doubt opened guess explain attract string
context solid cities asking random depend mentioned claimed definitely core opening believed
holding ice authorities score cells neighbor remove district worse concerns presidential
policies independent protection sudden strategy girls missing politics spell graph labor kick
steps smaller roll researchers closed transport aspect none marriage elements hearing supported
testing massive stick guard border copy owner digital task issued detect partners shared cancer
explained heat investment wood tools belief crisis operation contains express finding funding
established degree dangerous freedom church catch presence authority button valid weak starts
reference collection beautiful tells waiting providing daughter master purposes equal turns
documents watching ran reject victims witness reform caught traffic models served batter agreed
truly units variety amazing confirmed entirely purchase element cash determine cars views drugs
department covered mere mix unlike stopped skill becoming appropriate weekend sites animal scale
charged instruct methods judge dollars standing debt driving album commercial discovered output
switch annual stated residents allowing factors occurred north injury insurance repeated arms
construction forms mental equipment discussion regarding chair proceed supply input wealth
putting located kid telling proposed funds baby spoke earn exchange pair arrested identified
mobile hundreds trend electric nine coverage appeal finished flow deliver photos pieces rough
partner concerned suggested corner husband internet balance sounds millions radio combat fuel
distance tests managed measures attend generation conversation gender carried arrived failure
minimum worst keeping intended illegal determined trip raise feels package justice farm reduced
novel capacity impossible plays minister communities interests conflict requirements operating
committed relatively south afford identity decisions accused victory seek tight humans familiar
audience internal sides appoint enforcement joined differences protest twice glass expression
decide planning handle maximum sea helps bound mouth standards army bug planet winning faster
broken defined healthy competition announce client possibly finish crew editor hate sale pages
opposition refuge flight apart applications shape speaking worry introduced diet functions
stress accounts honest tree exercise scientists legislation survey rich maintain leadership
magic figures absolutely fourth presented alcohol grab plus alternative approx objects
television committee motor appearance sitting strike fold belong prepared indeed rent advice
changing listed launched lived sets applied housing odd powers remaining causes manner suggests
ends scientific coal minute leaves completed focused monitor vehicles affected construct follows
ton homes largely votes businesses yards materials guide closer sports taxes decade dropped
delay secure treated filed van column consult entry marijuana apparently increases specifically
religion frame helping edge bigger boost row rid vision wearing award factor god enemies
accident stars expensive lock format soldiers agent rapid tough believes wear commission warm
king patient happening bought soul seat revolution ring offensive returns videos famous
candidates percentage visual trouble prove connected possibility expert library fellow dry signs
quiet pure filled unable vast identify fish bodies developing experienced domestic combined
chemical pool egg hurt markets conservative supporters agencies temperature conducted pulled
advance license imagine hell fixed surprise craft dial relevant entered leads pictures paying
updates greatest height listen capable offering bright planned sweet typically prospect teen
lots forget severe suit correspond flag deploy thoughts matters adapt fill forth payment spring
losing bringing distribution combination plenty tow seeking examples classes beer moves panel
properly plug estimated defensive volume positions links transform opponent tweet shop fly talks
bag aid plants attorney begins storage metal ordered remained loved prompt updated experts
walking ancient performed neither manufacture selected mine ultimately label meat giant
interpret evening evil obviously advanced weather symbol sole potentially originally deck stood
youth basically involve aircraft confirm messages kit existence turning desire flat neighborhood
pointed professor expressed session bare doctor writer recorded broke orders motion immigration
contrast excellent technical cloud creation strange fort extent rain sample accepted fired
stands boot statements versions selling experiment retail depart bond reaction resolution react
approved replace sport chain emergency route pal banks grew corporate selection slowly attempts
findings index shock cart storm essential reasonable considering university married numerous
seriously referred consistent facts revenue passing gather unknown union browser reporting sand
suddenly surprising somewhat challenges settings experiences receiving joint cultural bull
facing boss increasingly shift streets lie laugh adults customer obtained supporting detailed
picked wire sight developers persons sad cup warning boys bird observed zone channel refused
spokesman acts struggle category realize employee guns thick fairly troops agents battery flu
confident empty sector excited remote destroyed moral dress lit carbon installed violent solar
practices ride improved audio eating properties anywhere blow proud plane square proof talked
sister holds resident resistance split confidence cuts exception zero copyright totally sick
household fees drivers necessarily regulations perspective escape surprised heads causing
targets afternoon adds usual articles injured manage explains linked discussed occasion opposite
faces denied nut disappoint voting institutions drag nearby guilty reward apps upper advert snow
dismiss signal crimes council sufficient historical pin succeed tradition description sky widely
wave definition cycle brings alive frequently intention privacy rail cooper tested comfortable
delivered depth writes assets transition artist components walked root participants noticed
importance assert injuries registered intent missed sentence assistance database buildings
classic thinks fee effectively facility bear chapter dogs latter admitted posts lawyer
controlled menu protected amounts native represents abandon carrying tank declared hat punish
universe opposed hardware coffee owned hall describe portion governments depending offense trick
desk movies remark mail conscious ruling replaced renew shots armed constant taste realized buff
efficient flood consequences anyway iron evolution proposal knowing supports controls merely
fashion gift era kinds legit essentially suffered promise excess prime stores journey requests
consumers tiny crash emotional goods elected blocks island elections broadcast cheap nations
seasons waste fields profile authors deaths formed ongoing assume coast voted flex welcome
locations buying architect harder interface restaurant discover exceed duty pitch responded
extended medium magazine limits external younger remind immediate hidden phase plot exposure
expansion pushed marketing hits narrow perfectly enable precise regime chosen trees recommended
arguments exists bike breaking crazy virtual permission consumer closely hopes array readers
employment creature resulting accurate moments argued sought suffering icon bonus acting
comparison smooth sending dealing attached sees typical finds emails highlight confront topic
understood mob dedicated songs tech aside grant argue containing schedule liberal publicly
heavily everybody facilities division explore shares ideal plastic distinct trading initially
thousand paragraph roughly creative consumption films obtain tall grown watched surrounding
flying serving jail literally exposed lies bat earned specified degrees sharing winter fewer
somewhere attacked domain stronger penalty declined neck fraud currency rising tab talent
village legs acid involving yesterday west visible struck awesome drawn answers threats defeat
vent situations saved faced mistake symptoms falling ending matches explanation anymore letters
risks reportedly plate subjects attempted unlikely marked theme passion info component doctors
granted paint honor smoke payments primarily deals scheduled fundamental protein newspaper
clients feedback stretch hotel sugar milk approval equivalent insert extension constantly
generated recognize vary patterns profession colors infect shell puts delivery brown processing
lights industrial somehow politicians indicate hole techniques competitive campus aspects
helpful shield trigger personally tag keeps bench gap east recovery profit strongly allegations
reporters flash strict parking weird regions intellect finger conclusion feelings extensive
mixed harass territory successfully layer allies bunch normally networks chose opponents
regardless bridge wage radical secretary gang decent uncle investors walls publish generate
promote cutting chest drinking collected hoping warned instructions gear criticism counsel
reduction teaching deeply estimates choices permanent tournament contained wake reveal processes
blind steel carefully gaming houses truck scored sharp afraid scheme decline pushing possession
teachers yield hide colleagues principles loud sin stone taught terrible stuck wheel champions
repeatedly likes bath noise northern ticket alongside river cable wins upcoming survive inspired
statistics yellow urban quarterback register abilities variable thin gotten asks tail exciting
encourage commitment rally spin captured allegedly artists electronic regional myth directed
extract sorry vice wonderful ships activists habit abortion void explicit engaged angry rating
worried apartment estate county immigrants folks targeted informed driven regularly basket
principle alert democracy represented capture announcement hook refugees recognized pilot
returning trail routine courts friendly breath studio impressive fault outcome elsewhere retire
pounds loan ratio gonna invent promised dinner creates operate sustain incredible warrant
lawsuit reviews featured forever poverty laid filter creatures association valuable liquid
incredibly solutions atmosphere blame respectively fifth governor purchased hack intense origin
define careful shoulder tied destruction nobody tip technique legend accord busy hang surgery
uniform scenes scream adopted scores indicated entertain twenty engage smile personnel doors
tone machines entering forest horse complaint academic fruit wine clothes squad stable raw keys
complicated funny relief chart drawing module salt resource somebody participate rose muscle
consent continuing rear provision liked meetings convent auto recording programming proved stab
caption newly edition passes guest armor inches assign prepare depends tracks lists alter
everywhere fought scope enjoyed aggressive recipe rarely subsection southern frequency behalf
sequence worker mainly organized fake concluded chances withdraw tries samples bid photograph
contest signing exit racial sword inner protocol shipping surveillance luck winner silver
unusual crack ties practical province priority describes branch fighters foundation judgment
solve neutral reputation smell bread claiming genetic technologies upgrade developer barely
illness patch stupid protests chat wing parliament render bitcoin recover threatened spiritual
advertising improvements errors sensitive cream exclusive structures stored temporary tickets
possess contracts mountain equally lands rejected transaction provisions gained directory
raising console uncertain measured plain seats estimate contributed episodes movements suffer
mainstream franchise demands agenda dozen clinical visited actor contribute inject listening
congress premium assigned worldwide narrative relation covers grass engineering steal replied
ultimate titles joy hyper officially difficulty resulted restrictions beauty maps electricity
violation usage permit naturally thrown alien pace poison formal genuine procedure trained
crucial lets champion writers connections encounter achieved checks assistant whenever clock
borrow mad personality gains commonly rely moon vulnerable western occurs vessel subsequent
fantasy boat marks ordinary petition adventure ignore factory tasks depression eligible reducing
striking dollar instrument philosophy ruled scenario debut tea absence ham tables chairman pump
rapidly substantial saving assessment dynamic stack hardly sty transactions gate screens
submitted languages falls strikes relax bell disorder locked emissions shortly rival dust
reaching stations applies anger compare aimed regulation jury airport sections medicine hitting
spark ads foods replacement chicken lowest minds involves procedures bills improvement
expectations intellectual spaces mechanism barrel static tips handling journalists comic versus
loop surf beliefs setup brew computers displayed fiscal`)
