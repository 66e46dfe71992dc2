package figures

import (
	"context"
	"fmt"
	"github.com/recallbot/recall/adapters/telegram"
	"os"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/llm/llmtest"
)

// FirstReplyResult is, over fresh starts of the bot, how long the first
// and the last reply of one conversation took.
type FirstReplyResult struct {
	First, Last []time.Duration // one per start
}

// FirstReply starts the real bot (bin) runs times, each on a fresh data
// folder with a fake LLM answering at once, and has one user send turns
// messages (each after the previous reply) as soon as the bot is ready. It
// returns, per start, the time from sending the first message to its reply
// and the same for the last: what the first turn pays beyond a warm one
// (loading the tokenizer's tables, first statements, first connections).
// The user waits a little over a second after each reply, as people do, so
// that no reply waits for Telegram's per-chat flood limit.
func FirstReply(ctx context.Context, bin string, turns, runs int) (FirstReplyResult, error) {
	var res FirstReplyResult
	if turns < 2 {
		return res, fmt.Errorf("FirstReply: %d turns, want at least 2", turns)
	}
	srv := llmtest.Start(func(req llmtest.Request) llmtest.Response {
		return llmtest.Response{Text: "noted: " + req.Messages[len(req.Messages)-1].Content}
	})
	defer srv.Close()
	g := chattext.NewWords(61)
	for i := range runs {
		data, err := os.MkdirTemp("", "recall-first-")
		if err != nil {
			return res, err
		}
		first, last, err := firstReply(ctx, bin, data, srv.URL, g.Pool(turns, 5, 30, nil))
		os.RemoveAll(data)
		if err != nil {
			return res, fmt.Errorf("start %d: %w", i+1, err)
		}
		res.First, res.Last = append(res.First, first), append(res.Last, last)
	}
	return res, nil
}

func firstReply(ctx context.Context, bin, data, llm string, texts []string) (first, last time.Duration, err error) {
	tg := StartFakeTelegram()
	defer tg.Close()
	tg.Think = telegram.DefaultChatEvery + 100*time.Millisecond // a reply is not held by the chat's flood limit
	bot, err := StartBot(bin, BotEnv{Data: data, Telegram: tg, LLM: llm})
	if err != nil {
		return 0, 0, err
	}
	defer bot.Stop()
	if _, err := bot.WaitReady(ctx, time.Minute); err != nil {
		return 0, 0, err
	}
	const user = 700001
	select {
	case <-tg.Converse([]int64{user}, [][]string{texts}):
	case <-time.After(time.Minute):
		return 0, 0, fmt.Errorf("%d messages not answered within a minute:\n%s", len(texts), bot.Log())
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	lat := tg.Latencies(user)
	if len(lat) != len(texts) {
		return 0, 0, fmt.Errorf("%d replies to %d messages", len(lat), len(texts))
	}
	return lat[0], lat[len(lat)-1], bot.Stop()
}
