package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

func TestJSONFileNames(t *testing.T) {
	owners := []string{"telegram:1", "Telegram:1", "telegram-1", "whatsapp:4915112345678@s.whatsapp.net", "../../etc/passwd",
		"..", ".", "a/b", "a\\b", "A/B", "/abs/path", "nul\x00byte", "телеграм:пользователь", "日本", "", " ", "con", "a:b:c",
		strings.Repeat("x", 300), strings.Repeat("x", 300) + "y", strings.Repeat("é", 100)}
	j, err := OpenJSON(filepath.Join(t.TempDir(), "json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, o := range owners {
		name := JSONFileName(o)
		if strings.ContainsAny(name, `/\`+"\x00") || strings.Contains(name, "..") || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			t.Errorf("owner %q: unsafe name %q", o, name)
		}
		if len(name) > 48+1+16+len(".json") {
			t.Errorf("owner %q: name %q too long", o, name)
		}
		for _, r := range strings.TrimSuffix(name, ".json") {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				t.Errorf("owner %q: name %q has %q", o, name, r)
			}
		}
		if prev, ok := seen[name]; ok {
			t.Errorf("owners %q and %q share the name %q", prev, o, name)
		}
		seen[name] = o
		if JSONFileName(o) != name {
			t.Errorf("owner %q: name not stable", o)
		}
		if p := j.Path(o); filepath.Dir(p) != j.Dir() {
			t.Errorf("owner %q: path %q outside %q", o, p, j.Dir())
		}
	}
	if got := JSONFileName("telegram:123"); !strings.HasPrefix(got, "telegram-123-") {
		t.Errorf("readable part lost: %q", got)
	}
	// Every one of them can store and read back its data.
	for _, o := range owners {
		if err := j.Remember(cfCtx, o, UserMemory{Key: "k", Content: o}, 0); err != nil {
			t.Fatalf("owner %q: %v", o, err)
		}
	}
	j2, _ := OpenJSON(j.Dir())
	got, err := j2.Owners(cfCtx)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(owners)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("owners after reopening: %q, want %q", got, want)
	}
	for _, o := range owners {
		if m, err := j2.Memories(cfCtx, o); err != nil || len(m) != 1 || m[0].Content != o {
			t.Fatalf("owner %q: %+v %v", o, m, err)
		}
	}
	entries, _ := os.ReadDir(j.Dir())
	if len(entries) != len(owners) {
		t.Fatalf("%d entries in the directory, want %d", len(entries), len(owners))
	}
}

func jsonWithData(t *testing.T) (*JSON, pipeline.Key) {
	t.Helper()
	j, err := OpenJSON(filepath.Join(t.TempDir(), "data", "json"))
	if err != nil {
		t.Fatal(err)
	}
	k := cfKey("telegram", "7")
	cfAppend(t, j, cfUser(k, "1", "the old text", cfT0), cfBot(k, "1", "an old answer", cfT0))
	if err := j.PutSettings(cfCtx, Settings{Owner: k.Owner(), Threshold: 4}); err != nil {
		t.Fatal(err)
	}
	return j, k
}

func TestJSONFilePermissions(t *testing.T) {
	j, k := jsonWithData(t)
	fi, err := os.Stat(j.Dir())
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v %v, want 0700", fi.Mode().Perm(), err)
	}
	fi, err = os.Stat(j.Path(k.Owner()))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v %v, want 0600", fi.Mode().Perm(), err)
	}
	if !j.Has(k.Owner()) || j.Has("telegram:8") {
		t.Fatal("Has")
	}
	entries, _ := os.ReadDir(j.Dir())
	if len(entries) != 1 {
		t.Fatalf("stray files: %v", entries)
	}
}

// TestJSONFileFormat: the file is one documented wrapper holding exactly
// the owner's export.
func TestJSONFileFormat(t *testing.T) {
	j, k := jsonWithData(t)
	cfArchive(t, j, k, cfIDs(cfActive(t, j, k)), "sum", cfT0, 1)
	b, err := os.ReadFile(j.Path(k.Owner()))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f struct {
		Format        string           `json:"format"`
		Version       int              `json:"version"`
		NextMessageID int64            `json:"next_message_id"`
		NextSummaryID int64            `json:"next_summary_id"`
		NextFactID    int64            `json:"next_fact_id"`
		NextChunk     map[string]int64 `json:"next_chunk"`
		Data          OwnerData        `json:"data"`
	}
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	if f.Format != "recall-owner" || f.Version != 1 || f.NextMessageID != 3 || f.NextSummaryID != 2 || f.NextChunk[k.String()] != 2 {
		t.Fatalf("wrapper: %+v", f)
	}
	if err := f.Data.Validate(); err != nil {
		t.Fatal(err)
	}
	exp := cfExport(t, j, k.Owner(), nil)
	got, _ := json.Marshal(f.Data)
	want, _ := json.Marshal(exp)
	if string(got) != string(want) {
		t.Fatalf("file data:\n%s\nexport:\n%s", got, want)
	}
}

// TestJSONFailedWriteChangesNothing makes the temporary file impossible to
// create (a directory sits at its name, which works as root too): every
// kind of write fails, and neither the file nor the state changes.
func TestJSONFailedWriteChangesNothing(t *testing.T) {
	j, k := jsonWithData(t)
	owner := k.Owner()
	path := j.Path(owner)
	before, _ := os.ReadFile(path)
	exp := cfNormalizeExport(t, cfExport(t, j, owner, nil))
	st := cfStatus(t, j, k)

	block := j.tempPath(owner)
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	act := cfActive(t, j, k)
	writes := map[string]func() error{
		"append": func() error {
			_, err := j.Append(cfCtx, []Message{cfUser(k, "2", "never stored", cfT0)})
			return err
		},
		"archive": func() error {
			_, err := j.Archive(cfCtx, k, cfIDs(act), Summary{Text: "never"}, 1)
			return err
		},
		"settings": func() error { return j.PutSettings(cfCtx, Settings{Owner: owner, Threshold: 9}) },
		"remember": func() error { return j.Remember(cfCtx, owner, UserMemory{Key: "x", Content: "y"}, 0) },
		"fact": func() error {
			_, _, err := j.AddFact(cfCtx, owner, Fact{Content: "never"})
			return err
		},
		"purge age": func() error {
			_, err := j.Purge(cfCtx, PurgeScope{Owner: owner, OlderThan: cfT0.Add(time.Hour)})
			return err
		},
		"import": func() error {
			_, err := j.Import(cfCtx, OwnerData{Owner: owner, Memories: []UserMemory{{Key: "z", Content: "z"}}})
			return err
		},
	}
	for name, w := range writes {
		if err := w(); err == nil {
			t.Fatalf("%s succeeded with the temporary file blocked", name)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatalf("%s changed the file", name)
		}
		if got := cfNormalizeExport(t, cfExport(t, j, owner, nil)); got != exp {
			t.Fatalf("%s changed the state:\n%s", name, got)
		}
		if got := cfStatus(t, j, k); fmt.Sprint(got) != fmt.Sprint(st) {
			t.Fatalf("%s changed the status: %+v", name, got)
		}
		if hits := cfSearch(t, j, k, Query{Text: "never stored"}); hits != nil {
			t.Fatalf("%s: failed append is searchable", name)
		}
	}
	// A reopened store sees the old file.
	j2, _ := OpenJSON(j.Dir())
	if got := cfNormalizeExport(t, cfExport(t, j2, owner, nil)); got != exp {
		t.Fatalf("reopened state differs:\n%s", got)
	}
	// Once the obstacle is gone, writes work again and ids were not used up.
	os.RemoveAll(block)
	cfAppend(t, j, cfUser(k, "2", "stored now", cfT0))
	if act := cfActive(t, j, k); len(act) != 3 || act[2].ID != 3 {
		t.Fatalf("after recovery: %+v", act)
	}
}

func TestJSONFailedWriteReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	j, k := jsonWithData(t)
	before, _ := os.ReadFile(j.Path(k.Owner()))
	os.Chmod(j.Dir(), 0o500)
	defer os.Chmod(j.Dir(), 0o700)
	if _, err := j.Append(cfCtx, []Message{cfUser(k, "2", "never stored", cfT0)}); err == nil {
		t.Fatal("append to a read-only directory succeeded")
	}
	if after, _ := os.ReadFile(j.Path(k.Owner())); !bytes.Equal(before, after) {
		t.Fatal("file changed")
	}
	if st := cfStatus(t, j, k); st.Total != 2 {
		t.Fatalf("state changed: %+v", st)
	}
}

// TestJSONPurgeRemovesText: purged text is gone from the file's bytes, and a
// whole-owner purge removes the file.
func TestJSONPurgeRemovesText(t *testing.T) {
	j, k := jsonWithData(t)
	owner := k.Owner()
	topic := pipeline.Key{Channel: k.Channel, Chat: k.Chat, Thread: "3"}
	cfAppend(t, j, cfUser(k, "2", "a recent message", cfT0.Add(48*time.Hour)), cfUser(topic, "1", "topic secret-topic-words", cfT0.Add(48*time.Hour)))
	act := cfActive(t, j, k)
	cfArchive(t, j, k, cfIDs(act[:2]), "summary of the old text", cfT0.Add(time.Hour), 0)
	j.AddFact(cfCtx, owner, Fact{Content: "old fact text", Key: k.String(), Created: cfT0})
	j.Search(cfCtx, k, Query{Text: "old text"}) // fill the token cache
	has := func(s string) bool {
		b, err := os.ReadFile(j.Path(owner))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Contains(b, []byte(s))
	}
	if !has("the old text") || !has("summary of the old text") || !has("old fact text") {
		t.Fatal("data missing from the file")
	}
	rep, err := j.Purge(cfCtx, PurgeScope{Owner: owner, OlderThan: cfT0.Add(24 * time.Hour)})
	if err != nil || rep != (PurgeReport{Messages: 2, Summaries: 1, Facts: 1}) {
		t.Fatalf("age purge: %+v %v", rep, err)
	}
	for _, s := range []string{"the old text", "an old answer", "summary of the old text", "old fact text"} {
		if has(s) {
			t.Fatalf("%q still in the file after the age purge", s)
		}
	}
	if hits := cfSearch(t, j, k, Query{Text: "old text"}); hits != nil {
		t.Fatalf("purged messages still found: %+v", hits)
	}
	if !has("a recent message") {
		t.Fatal("the recent message went too")
	}
	if _, err := j.Purge(cfCtx, PurgeScope{Owner: owner, Key: topic}); err != nil {
		t.Fatal(err)
	}
	if has("secret-topic-words") {
		t.Fatal("purged conversation still in the file")
	}
	if _, err := j.Purge(cfCtx, PurgeScope{Owner: owner}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(j.Path(owner)); !os.IsNotExist(err) {
		t.Fatalf("file after a whole-owner purge: %v", err)
	}
	if j.Has(owner) {
		t.Fatal("Has after purge")
	}
	entries, _ := os.ReadDir(j.Dir())
	if len(entries) != 0 {
		t.Fatalf("directory not empty: %v", entries)
	}
}

// TestJSONReopen: a second JSON on the same directory reads the same data
// and continues the ids and chunks.
func TestJSONReopen(t *testing.T) {
	j, k := jsonWithData(t)
	cfArchive(t, j, k, cfIDs(cfActive(t, j, k)), "sum", cfT0, 1)
	j.Remember(cfCtx, k.Owner(), UserMemory{Key: "a", Content: "b"}, 0)
	j.AddFact(cfCtx, k.Owner(), Fact{Content: "a fact"})
	want := cfNormalizeExport(t, cfExport(t, j, k.Owner(), nil))
	j.Close()
	if _, err := j.Active(cfCtx, k); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	j2, err := OpenJSON(j.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if got := cfNormalizeExport(t, cfExport(t, j2, k.Owner(), nil)); got != want {
		t.Fatalf("reopened:\n%s\nwant:\n%s", got, want)
	}
	cfAppend(t, j2, cfUser(k, "9", "after reopen", cfT0))
	act := cfActive(t, j2, k)
	if len(act) != 1 || act[0].ID != 3 {
		t.Fatalf("ids after reopen: %+v", act)
	}
	s := cfArchive(t, j2, k, cfIDs(act), "again", cfT0, 0)
	if !slices.Equal(s.Sources, []int64{2}) || s.ID != 2 {
		t.Fatalf("summary after reopen: %+v", s)
	}
	if f, merged, _ := j2.AddFact(cfCtx, k.Owner(), Fact{Content: "another fact entirely"}); merged || f.ID != 2 {
		t.Fatalf("fact id after reopen: %+v", f)
	}
}

// TestJSONRejectsForeignFile: a file whose owner is not the one asked for
// (copied or renamed by hand) is an error, never someone else's data.
func TestJSONRejectsForeignFile(t *testing.T) {
	j, k := jsonWithData(t)
	b, _ := os.ReadFile(j.Path(k.Owner()))
	victim := "telegram:8"
	if err := os.WriteFile(j.Path(victim), b, 0o600); err != nil {
		t.Fatal(err)
	}
	j2, _ := OpenJSON(j.Dir())
	if _, err := j2.Active(cfCtx, cfKey("telegram", "8")); err == nil || !strings.Contains(err.Error(), "belongs to") {
		t.Fatalf("foreign file read: %v", err)
	}
	if err := j2.Remember(cfCtx, victim, UserMemory{Key: "a", Content: "b"}, 0); err == nil {
		t.Fatal("write over a foreign file succeeded")
	}
	if o, _ := j2.Owners(cfCtx); !slices.Equal(o, []string{k.Owner()}) {
		t.Fatalf("owners: %q", o)
	}
	os.WriteFile(j.Path("telegram:9"), []byte("{not json"), 0o600)
	if _, _, err := j2.Settings(cfCtx, "telegram:9"); err == nil {
		t.Fatal("corrupt file read without error")
	}
	if o, err := j2.Owners(cfCtx); err != nil || len(o) != 1 {
		t.Fatalf("owners with a corrupt file: %q %v", o, err)
	}
}

// TestJSONRanksLikeSQLite: with one conversation in each store, FTS5's
// statistics and the JSON backend's are the same, so scores must agree.
func TestJSONRanksLikeSQLite(t *testing.T) {
	s, j := cfOpenSQLite(t), cfOpenJSON(t)
	k := cfKey("telegram", "1")
	words := strings.Fields("lisbon moving moved mover piano pizza zebra echo café Crème naïve running runs ran relational conditional the a of")
	rng := rand.New(rand.NewPCG(3, 4))
	var msgs []Message
	for i := range 120 {
		n := 1 + rng.IntN(12)
		var text []string
		for range n {
			text = append(text, words[rng.IntN(len(words))])
		}
		m := cfUser(k, fmt.Sprint(i), strings.Join(text, " "), cfT0.Add(time.Duration(i)*time.Second))
		m.SenderName = []string{"", "Alice", "Zebra Echo", "Bob Lisbon"}[rng.IntN(4)]
		msgs = append(msgs, m)
	}
	cfAppend(t, s, msgs...)
	cfAppend(t, j, msgs...)
	for i := range 60 {
		s.AddFact(cfCtx, "telegram:1", Fact{Content: fmt.Sprint(msgs[i].Text, " ", i), Created: cfT0.Add(time.Duration(i) * time.Second)})
		j.AddFact(cfCtx, "telegram:1", Fact{Content: fmt.Sprint(msgs[i].Text, " ", i), Created: cfT0.Add(time.Duration(i) * time.Second)})
	}
	queries := []string{"lisbon", "moving", "zebra", "echo", "alice", "cafe creme", "piano pizza zebra", "relations conditionally",
		"ran runs running", "lisbon bob", "naive", "lisbon lisbon moving", "nothing"}
	for _, q := range queries {
		for _, qq := range []Query{{Text: q, Limit: 50}, {Text: q, Limit: 5, TokenBudget: 12}} {
			hs, hj := cfSearch(t, s, k, qq), cfSearch(t, j, k, qq)
			if len(hs) != len(hj) {
				t.Fatalf("%+v: SQLite %d hits, JSON %d", qq, len(hs), len(hj))
			}
			for i := range hs {
				if hs[i].Message.PlatformID != hj[i].Message.PlatformID || math.Abs(hs[i].Score-hj[i].Score) > 1e-9*math.Abs(hs[i].Score) {
					t.Fatalf("%+v hit %d: SQLite %s %v, JSON %s %v", qq, i, hs[i].Message.PlatformID, hs[i].Score, hj[i].Message.PlatformID, hj[i].Score)
				}
			}
		}
		fs, _ := s.Facts(cfCtx, "telegram:1", q, 30)
		fj, _ := j.Facts(cfCtx, "telegram:1", q, 30)
		if len(fs) != len(fj) {
			t.Fatalf("facts %q: SQLite %d, JSON %d", q, len(fs), len(fj))
		}
		for i := range fs {
			if fs[i].Content != fj[i].Content {
				t.Fatalf("facts %q #%d: SQLite %q, JSON %q", q, i, fs[i].Content, fj[i].Content)
			}
		}
	}
}
