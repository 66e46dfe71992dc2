package telegram

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// BenchmarkTelegramThroughput measures messages answered per second, side by
// side: through the fake Bot API, the adapter (long polling, normalization,
// durable accept, submit) and the full pipeline to the reply; and through the
// same pipeline alone (Dispatcher.Submit of the same messages, a no-op
// sender). The LLM fake answers at once. Each iteration is one message in
// each run; 16 conversations.
func BenchmarkTelegramThroughput(b *testing.B) {
	const chats = 16
	users := make([]string, chats)
	for i := range users {
		users[i] = "telegram:" + strconv.Itoa(1000+i)
	}

	// Through the adapter.
	api := newFakeAPI(b)
	st := newStack(b, api, stackOptions{allowed: users, quiet: true})
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		u := int64(1000 + i%chats)
		api.SendText(privateChat(u), u, "message "+strconv.Itoa(i))
	}
	if !api.WaitDelivered(b.N, 5*time.Minute) {
		b.Fatal("not every message was answered")
	}
	viaAdapter := time.Since(start)
	b.StopTimer()
	st.stop()
	st.cancel = nil

	// The pipeline alone: the same messages, submitted directly.
	c := buildChain(b, b.TempDir(), st.llm.URL, users, nil)
	defer c.close(b)
	out := &countingSender{done: make(chan struct{}), want: int64(b.N)}
	ins := make([]pipeline.Inbound, b.N)
	now := time.Now()
	for i := range ins {
		u := 1000 + i%chats
		ins[i] = pipeline.Inbound{Key: key(int64(u), ""), SenderID: strconv.Itoa(u), SenderName: "User",
			MessageID: strconv.Itoa(i + 1), Text: "message " + strconv.Itoa(i), Time: now}
	}
	b.StartTimer()
	start = time.Now()
	for _, in := range ins {
		if err := c.disp.Submit(in, out); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-out.done:
	case <-time.After(5 * time.Minute):
		b.Fatal("not every message was answered")
	}
	alone := time.Since(start)

	b.ReportMetric(float64(b.N)/viaAdapter.Seconds(), "adapter_msgs/s")
	b.ReportMetric(float64(b.N)/alone.Seconds(), "pipeline_msgs/s")
	b.ReportMetric(viaAdapter.Seconds()/alone.Seconds(), "overhead_x")
}

// countingSender discards messages and closes done after want of them.
type countingSender struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (s *countingSender) Send(context.Context, pipeline.Outbound) (string, error) {
	if s.n.Add(1) == s.want {
		close(s.done)
	}
	return "", nil
}
