package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/media/mediatest"
)

// statusKiB reads a field (VmRSS, VmHWM) of /proc/pid/status, in KiB; 0
// when the process is gone.
func statusKiB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// children lists pid's child processes (its workers).
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// rssSampler samples the resident memory of a process and of its children
// every few milliseconds until stopped, keeping the peaks.
type rssSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu                           sync.Mutex
	peakBot, peakSum, peakWorker int64 // KiB
	workers                      int   // the most children seen at once
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			bot := statusKiB(pid, "VmRSS")
			sum, kids := bot, children(pid)
			var peakKid int64
			for _, c := range kids {
				r := statusKiB(c, "VmRSS")
				sum += r
				peakKid = max(peakKid, r)
			}
			s.mu.Lock()
			s.peakBot, s.peakSum, s.peakWorker = max(s.peakBot, bot), max(s.peakSum, sum), max(s.peakWorker, peakKid)
			s.workers = max(s.workers, len(kids))
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) end() (bot, sum, worker int64, workers int) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakBot, s.peakSum, s.peakWorker, s.workers
}

// The proof of issue 29: four hostile files of each kind arrive at once
// (a PDF whose cross-reference table points at itself, a PDF with a page
// that inflates to a GB, 10000×10000 PNGs at 8 and 16 bits a channel, a
// result.json of 6 million empty objects, a WhatsApp zip of 256 MiB of
// lines), each from a user of its own (a conversation's messages are
// answered in order: one user's files queue behind each other). The PDFs
// share two workers: one that finds none free within media.workers.wait
// is answered "send it again in a minute" (a clear answer too). Each gets a clear answer within 30 s, a text
// message sent meanwhile is answered within 2 s, and the bot's resident
// memory, its workers' included, stays within 300 MiB above idle.
func TestHostileFilesLeaveTheBotAnswering(t *testing.T) {
	if testing.Short() {
		t.Skip("generates ~30 MB of hostile files and runs them through the bot")
	}
	type kind struct {
		name, file string
		data       []byte
		photo      bool
		want       string
	}
	kinds := []kind{
		{"PDF with a looping xref", "loop.pdf", mediatest.LoopPDF(), false, "I couldn't read that PDF (it looks damaged or too complex)"},
		{"PDF inflating to 1 GiB", "bomb.pdf", mediatest.BombPDF(1 << 30), false, "I couldn't read that PDF (it looks damaged or too complex)"},
		{"10000×10000 PNG", "", mediatest.BombPNG(10000, 10000, false), true, "That image is too large for me to open (10000×10000 pixels"},
		{"10000×10000 16-bit PNG", "", mediatest.BombPNG(10000, 10000, true), true, "That image is too large for me to open (10000×10000 pixels"},
		{"result.json of 6M empty objects", "result.json", mediatest.BombJSON(6_000_000), false, "more than 1000000 messages"},
		{"WhatsApp zip of 256 MiB of lines", "WhatsApp Chat with Bomb.zip", mediatest.BombZip(256 << 20), false, "inflates"},
	}
	const texter = 42
	allowed := []string{"telegram:42"}
	for i := range 4 * len(kinds) {
		allowed = append(allowed, fmt.Sprintf("telegram:%d", 100+i))
	}
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	env := telegramEnv(t, tg, model.URL, "RECALL_ACCESS_ALLOWED_USERS="+strings.Join(allowed, ","), "RECALL_LOG_LEVEL=info")
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	pid := bot.cmd.Process.Pid

	// Idle: after a first turn, once it is answered.
	tg.sendText(texter, "hello")
	if _, ok := tg.waitSent("hello", 30*time.Second); !ok {
		t.Fatalf("no answer to a first message:\n%s", bot.output())
	}
	idle := statusKiB(pid, "VmRSS")

	type sentFile struct {
		kind kind
		chat int64
		id   int
	}
	var files []sentFile
	var updates []models.Update
	user := int64(100)
	for _, k := range kinds {
		for range 4 {
			u := user
			user++
			chat := telegramtest.PrivateChat(u)
			id := tg.MsgID(chat.ID)
			m := &models.Message{ID: id, Date: int(time.Now().Unix()), Chat: chat, From: &models.User{ID: u, FirstName: "Ann"}}
			ref := tg.AddFile(k.file, k.data)
			if k.photo {
				m.Photo = []models.PhotoSize{{FileID: ref, Width: 10000, Height: 10000, FileSize: len(k.data)}}
			} else {
				m.Document = &models.Document{FileID: ref, FileName: k.file, FileSize: int64(len(k.data))}
			}
			updates = append(updates, models.Update{Message: m})
			files = append(files, sentFile{k, chat.ID, id})
		}
	}
	sampler := sampleRSS(pid)
	start := time.Now()
	for _, u := range updates {
		tg.Push(u)
	}
	tg.sendText(texter, "ping while the files are read")
	textAt := time.Now()
	text, ok := tg.waitSent("ping while the files are read", 30*time.Second)
	if !ok {
		t.Fatalf("the text message was not answered:\n%s", bot.output())
	}
	textLatency := text.At.Sub(textAt)

	answered := func(f sentFile, calls []telegramtest.Call) (telegramtest.Call, bool) {
		for _, c := range telegramtest.FilterCalls(calls, "sendMessage") {
			if c.Err == nil && c.ChatID() == f.chat && c.ReplyTo() == f.id {
				return c, true
			}
		}
		return telegramtest.Call{}, false
	}
	calls, ok := tg.UntilWithin(90*time.Second, func(calls []telegramtest.Call) bool {
		for _, f := range files {
			if _, ok := answered(f, calls); !ok {
				return false
			}
		}
		return true
	})
	peakBot, peakSum, peakWorker, workers := sampler.end()
	hwm := statusKiB(pid, "VmHWM")
	if !ok {
		t.Fatalf("not every file was answered:\n%s\n%s", telegramtest.DumpCalls(calls), bot.output())
	}
	var slowest time.Duration
	busy := 0
	for _, f := range files {
		c, _ := answered(f, calls)
		d := c.At.Sub(start)
		slowest = max(slowest, d)
		if strings.Contains(c.Fields["text"], "again in a minute") {
			busy++
		} else if !strings.Contains(c.Fields["text"], f.kind.want) {
			t.Errorf("%s: answered %q", f.kind.name, c.Fields["text"])
		}
		if d > 30*time.Second {
			t.Errorf("%s: answered after %s", f.kind.name, d.Round(time.Millisecond))
		}
	}
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	t.Logf("idle %.1f MiB; peak: bot %.1f MiB (VmHWM %.1f), bot + workers %.1f MiB (%.1f above idle), one worker %.1f MiB, %d workers at once; "+
		"text answered in %s; slowest file answered in %s (%d of %d PDFs: workers busy, send again)",
		mib(idle), mib(peakBot), mib(hwm), mib(peakSum), mib(peakSum-idle), mib(peakWorker), workers,
		textLatency.Round(time.Millisecond), slowest.Round(time.Millisecond), busy, 8)
	if textLatency > 2*time.Second {
		t.Errorf("the text message was answered in %s", textLatency)
	}
	if above := max(peakSum, hwm) - idle; above > 300<<10 {
		t.Errorf("the bot's memory rose %.1f MiB above idle", mib(above))
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(60 * time.Second); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, bot.output())
	}
}
