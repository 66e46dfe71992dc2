package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/bench/chattext"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/pipeline"
)

// BenchmarkVoiceTurn measures a voice note's turn beside a text turn,
// through the whole chain as wired, with a model and a transcription
// server (the same fake) that answer at once: the voice turn's own
// overhead is the download, the upload to the transcription endpoint and
// its answer, the quota, the "🎤 heard" line. Reported: each turn's mean,
// p50 and p99, and the p50s' difference, voice − text (the overhead; the
// issue's bound is 20 ms), and the means' difference. The fake answers in the same process: its own
// work (parsing the upload) is in the voice turn's figure.
func BenchmarkVoiceTurn(b *testing.B) {
	voice, err := os.ReadFile("../media/testdata/voice.ogg")
	if err != nil {
		b.Fatal(err)
	}
	srv := llmtest.NewServer(b, llmtest.Echo("echo: "))
	// Both conversations hear the same words: turn i's text is what the
	// voice note of turn i says.
	words := chattext.NewMessages(1)
	var said atomic.Value
	srv.SetTranscriber(func(llmtest.Transcription) (string, int) { return said.Load().(string), 0 })
	cfg := config.Default()
	cfg.Data.Dir = filepath.Join(b.TempDir(), "data")
	cfg.HTTP.Listen = ""
	cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model, cfg.LLM.MaxRetries = srv.URL, "sk-test", "test-model", 0
	cfg.Access.Open = true
	cfg.Media.Transcription.Model = "whisper-1"
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	a, err := New(context.Background(), cfg, Parts{LogWriter: discard{}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	out := &sender{}
	textKey := pipeline.Key{Channel: "telegram", Chat: "1"}
	voiceKey := pipeline.Key{Channel: "telegram", Chat: "2"}
	turn := func(i int, voiceNote bool) time.Duration {
		if !voiceNote {
			said.Store(words.Message(false, []string{"Ann", "Bob"}))
		}
		in := pipeline.Inbound{Key: textKey, SenderID: "1", SenderName: "Ann", MessageID: strconv.Itoa(i),
			Text: said.Load().(string), Time: time.Now()}
		if voiceNote {
			in.Key, in.SenderID, in.Text = voiceKey, "2", ""
			in.Media = &pipeline.Media{Kind: pipeline.MediaVoice, MIME: "audio/ogg", Name: "voice.ogg", Size: int64(len(voice)),
				Duration: 3 * time.Second, Fetch: func(context.Context, int64) ([]byte, error) { return voice, nil }}
		}
		start := time.Now()
		if err := a.Handler.Handle(context.Background(), &pipeline.Turn{In: in, Out: out}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for i := range 20 { // warm both conversations
		turn(-1-i, false)
		turn(-1-i, true)
	}
	var text, spoken []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		text = append(text, turn(i, false))
		spoken = append(spoken, turn(i, true))
	}
	b.StopTimer()
	if n := len(srv.Transcriptions()); n != len(spoken)+20 {
		b.Fatalf("%d voice turns, %d transcriptions", len(spoken)+20, n)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	mean := func(ds []time.Duration) time.Duration {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return sum / time.Duration(len(ds))
	}
	pct := func(ds []time.Duration, p int) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, len(s)*p/100)]
	}
	b.ReportMetric(ms(mean(text)), "text-ms/turn")
	b.ReportMetric(ms(mean(spoken)), "voice-ms/turn")
	b.ReportMetric(ms(pct(text, 50)), "text-p50-ms")
	b.ReportMetric(ms(pct(spoken, 50)), "voice-p50-ms")
	b.ReportMetric(ms(pct(text, 99)), "text-p99-ms")
	b.ReportMetric(ms(pct(spoken, 99)), "voice-p99-ms")
	b.ReportMetric(ms(pct(spoken, 50)-pct(text, 50)), "voice-overhead-p50-ms")
	b.ReportMetric(ms(mean(spoken)-mean(text)), "voice-overhead-mean-ms")
	b.ReportMetric(0, "ns/op")
}
