package memory

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCopyToPostgres measures `bot migrate --to`'s copy (copyJob) of a
// data directory of PGBENCH_MSGS messages (100,000 by default: one
// conversation of 80%, the rest in 20 small ones) into a fresh PostgreSQL
// schema, in messages per second: with the parts the copy uses (2,000
// messages of a conversation per transaction) and with parts of 20,000,
// where a cost per message that grows with the transaction shows. Each
// iteration copies into a new schema. It needs RECALL_TEST_POSTGRES_URL and
// runs only when named:
//
//	RECALL_TEST_POSTGRES_URL=$(.ci/postgres $$) go test -run='^$' -bench=CopyToPostgres -benchtime=1x ./memory/
func BenchmarkCopyToPostgres(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "CopyToPostgres") {
		b.Skip("builds a 100,000-message store: select it explicitly, -bench=CopyToPostgres")
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("PGBENCH_MSGS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	src, err := Open(ctx, Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close(ctx)
	people := []string{"Ana", "Rui", "Kenji Sato"}
	g := newBenchText(5)
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	convs := map[string]*ConversationData{}
	var order []string
	for i := range n {
		key := "telegram:-100:big"
		if i%5 == 4 {
			key = "telegram:-100:small" + strconv.Itoa(i%21)
		}
		c := convs[key]
		if c == nil {
			c = &ConversationData{Key: key}
			convs[key] = c
			order = append(order, key)
		}
		m := Message{Role: RoleAssistant, PlatformID: strconv.Itoa(i), Time: t0.Add(time.Duration(i) * time.Second), Tokens: 20}
		if i%2 == 0 {
			m.Role, m.SenderName, m.SenderID = RoleUser, people[i/2%len(people)], strconv.Itoa(i/2%len(people))
		}
		m.Text = g.message(m.Role, people)
		c.Messages = append(c.Messages, m)
	}
	d := OwnerData{Owner: "telegram:-100"}
	for _, k := range order {
		d.Conversations = append(d.Conversations, *convs[k])
	}
	for _, part := range copyParts(d, 5000) {
		if _, err := src.Import(ctx, NewExport(part)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for _, part := range []int{copyPartMessages, 20_000} {
		var total time.Duration
		for range b.N {
			b.StopTimer()
			dst, err := OpenPostgres(ctx, pgTestURL(b))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			rep, err := copyToPostgres(ctx, src, dst, nil, part)
			total += time.Since(start)
			b.StopTimer()
			if err != nil || rep.Source.Messages != n {
				b.Fatalf("copy: %+v, %v", rep, err)
			}
			dst.Close()
			b.StartTimer()
		}
		rate := float64(n*b.N) / total.Seconds()
		b.ReportMetric(rate, "msgs/s_parts_of_"+strconv.Itoa(part))
		b.Logf("copied %d messages in parts of %d: %.0f messages/s", n, part, rate)
	}
}
