package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// TestCopyToPostgresSkipsRefusedRows: a copy into PostgreSQL does not stop
// at rows the target refuses. Here the target refuses, by a constraint,
// three messages among others (in parts of several, so each is found by
// halving) and a fact: each is reported with its id, conversation and the
// server's reason, everything else is copied and verified, and a second run
// (a resume) ends as well, reporting the SQLite owner's again and adding
// nothing twice. The JSON owner also holds a 30 MB and a 10 MB single-word
// message, which PostgreSQL refused before no index held words that long:
// they are copied whole. (The JSON file, retired after its copy verified,
// keeps its refused message.)
func TestCopyToPostgresSkipsRefusedRows(t *testing.T) {
	ctx := context.Background()
	src := openStore(t, t.TempDir())
	sq, js := pipeline.Key{Channel: "telegram", Chat: "7"}, pipeline.Key{Channel: "telegram", Chat: "8"}
	must(t, src.PutSettings(ctx, Settings{Owner: js.Owner(), Storage: StorageJSON, Threshold: 7, MemoryEnabled: true}))
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	huge, big := strings.Repeat("z", 30<<20), longWord(9, 10<<20)
	texts := map[pipeline.Key][]string{
		sq: {"the lighthouse at dawn", "REFUSE-ME please", "a boat", "lighthouse keeper", "REFUSE-ME too", "the end", "one more"},
		js: {"the lighthouse at dusk", huge, "a ship", big, "REFUSE-ME as well", "the end"},
	}
	wantRefused := map[int][]string{}
	for _, k := range []pipeline.Key{sq, js} {
		for i, text := range texts[k] {
			must(t, src.Enqueue(Message{Key: k, Role: RoleUser, SenderID: "u", SenderName: "Ana", PlatformID: fmt.Sprint(i + 1), Text: text, Time: t0.Add(time.Duration(i) * time.Second)}))
		}
		must(t, src.Flush(ctx))
		all, err := src.Active(ctx, k)
		must(t, err)
		for _, m := range all {
			if strings.HasPrefix(m.Text, "REFUSE-ME") {
				r := fmt.Sprintf("message %d of %s", m.ID, k)
				wantRefused[0] = append(wantRefused[0], r)
				if k == sq {
					wantRefused[1] = append(wantRefused[1], r)
				}
			}
		}
	}
	_, _, err := src.AddFact(ctx, sq.Owner(), Fact{Content: "likes boats", Key: sq.String()})
	must(t, err)
	refusedFact, _, err := src.AddFact(ctx, sq.Owner(), Fact{Content: "REFUSE-ME fact", Key: sq.String()})
	must(t, err)
	for run := range 2 {
		wantRefused[run] = append(wantRefused[run], fmt.Sprintf("fact %d of %s", refusedFact.ID, sq.Owner()))
		slices.Sort(wantRefused[run])
	}

	dst, err := OpenPostgres(ctx, pgTestURL(t))
	must(t, err)
	t.Cleanup(func() { dst.Close() })
	for _, q := range []string{
		`ALTER TABLE messages ADD CONSTRAINT refuse_marked CHECK (position('REFUSE-ME' in text) = 0)`,
		`ALTER TABLE facts ADD CONSTRAINT refuse_marked_fact CHECK (position('REFUSE-ME' in content) = 0)`,
	} {
		if _, err := dst.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for run := range 2 {
		rep, err := copyToPostgres(ctx, src, dst, nil, 3)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		var got []string
		for _, r := range rep.Refused {
			if !strings.Contains(r.Reason, "refuse_marked") || !strings.Contains(r.Reason, "23514") {
				t.Errorf("run %d: %s: not the server's reason", run, r)
			}
			got = append(got, strings.SplitN(r.String(), ": ", 2)[0])
		}
		slices.Sort(got)
		if !slices.Equal(got, wantRefused[run]) {
			t.Fatalf("run %d refused %q, want %q", run, got, wantRefused[run])
		}
		wantMsgs := len(texts[sq]) - 2
		if run == 0 {
			wantMsgs += len(texts[js]) - 1
		}
		if rep.Source.Messages != wantMsgs || rep.Source.Facts != 1 {
			t.Errorf("run %d: copied %d messages and %d facts, want %d and 1", run, rep.Source.Messages, rep.Source.Facts, wantMsgs)
		}
		for _, k := range []pipeline.Key{sq, js} {
			back, err := dst.Export(ctx, k.Owner(), nil)
			must(t, err)
			if len(back.Conversations) != 1 || len(back.Conversations[0].Messages) != len(texts[k])-2+boolInt(k == js) {
				t.Fatalf("run %d: PostgreSQL holds %d conversations of %s", run, len(back.Conversations), k)
			}
			if k == js {
				var sizes []int
				for _, m := range back.Conversations[0].Messages {
					sizes = append(sizes, len(m.Text))
				}
				// Both words are over MaxMessageBytes: copied cut to it (CutText),
				// never refused and never stopping the copy.
				cutHuge, _ := CutText(huge)
				cutBig, _ := CutText(big)
				if countOf(sizes, len(cutHuge)) != 1+boolInt(len(cutBig) == len(cutHuge)) || !slices.Contains(sizes, len(cutBig)) {
					t.Fatalf("run %d: message sizes in PostgreSQL %v: the 30 MB and 10 MB words are not there cut to %d bytes", run, sizes, MaxMessageBytes)
				}
			}
		}
	}
	hits, err := dst.Search(ctx, js, Query{Text: "lighthouse"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search in PostgreSQL: %d hits, %v", len(hits), err)
	}
}

// countOf counts v in xs.
func countOf(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}
