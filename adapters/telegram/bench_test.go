package telegram

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/adapters/adaptertest"
	"github.com/recallbot/recall/llm/llmtest"
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
	c := adaptertest.NewChain(b, adaptertest.ChainOptions{Dir: b.TempDir(), LLMURL: st.llm.URL, Allowed: users, BotName: fakeBotName})
	defer c.Close(b, nil)
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
		if err := c.Disp.Submit(in, out); err != nil {
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

// BenchmarkStreamLatency measures, side by side, when the user sees text of
// a reply the model writes slowly (20 pieces, 20ms apart; 400ms for the
// whole answer when not streamed), in a forum topic: with telegram.stream the first text (sendMessage) and the final
// formatted edit, at the real pace of one update a second; without it the
// one message. Also the Bot API calls that change the chat per reply.
// Each iteration is one message in each mode.
func BenchmarkStreamLatency(b *testing.B) {
	pieces := make([]string, 20)
	for i := range pieces {
		pieces[i] = " word" + strconv.Itoa(i)
	}
	slow := func(r llmtest.Request) llmtest.Response {
		resp := llmtest.Response{Pieces: pieces, Text: strings.Join(pieces, ""), PieceDelay: 20 * time.Millisecond}
		if !r.Stream {
			resp.Delay = time.Duration(len(pieces)) * resp.PieceDelay // the same model, answering whole
		}
		return resp
	}
	forum := groupChat(-100500, true)
	// run sends b.N messages and returns the mean time to the first
	// update, to the last one, and the updates per reply.
	run := func(stream bool) (first, last time.Duration, updates float64) {
		api := newFakeAPI(b)
		st := newStack(b, api, stackOptions{stream: stream, llm: slow, quiet: true})
		defer func() { st.stop(); st.cancel = nil }()
		isUpdate := func(c fakeCall) bool {
			return c.Err == nil && c.ChatID() == forum.ID && (c.Method == "sendMessage" || c.Method == "editMessageText")
		}
		for range b.N {
			n0 := len(api.Calls())
			sent := time.Now()
			topicMessage(api, forum, "write slowly")
			calls := api.Wait("the reply", func(calls []fakeCall) bool {
				for _, c := range calls[n0:] {
					if isUpdate(c) && (!stream || c.Fields["parse_mode"] == "HTML") {
						return true
					}
				}
				return false
			})
			var mine []fakeCall
			for _, c := range calls[n0:] {
				if isUpdate(c) {
					mine = append(mine, c)
				}
			}
			first += mine[0].At.Sub(sent)
			last += mine[len(mine)-1].At.Sub(sent)
			updates += float64(len(mine))
		}
		n := time.Duration(b.N)
		return first / n, last / n, updates / float64(b.N)
	}
	b.ResetTimer()
	sFirst, sLast, sCalls := run(true)
	_, wLast, wCalls := run(false)
	b.ReportMetric(float64(sFirst.Milliseconds()), "stream_first_text_ms")
	b.ReportMetric(float64(sLast.Milliseconds()), "stream_final_ms")
	b.ReportMetric(sCalls, "stream_updates/reply")
	b.ReportMetric(float64(wLast.Milliseconds()), "whole_reply_ms")
	b.ReportMetric(wCalls, "whole_updates/reply")
}
