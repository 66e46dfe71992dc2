package main

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/telegram/telegramtest"
	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
	"github.com/recallbot/recall/memory"
)

// A voice note is heard (transcribed), answered like text and remembered:
// after a restart a typed question is answered from what was said.
func TestVoiceNoteIsHeardAndRemembered(t *testing.T) {
	voice, err := os.ReadFile("../../media/testdata/voice.ogg") // espeak-ng + opusenc, 3.6 KB
	if err != nil {
		t.Fatal(err)
	}
	tg := newFakeTelegram(t)
	model := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		last := r.Messages[len(r.Messages)-1].Content
		if strings.Contains(last, "sister") && strings.Contains(last, "?") {
			for _, m := range r.Messages[:len(r.Messages)-1] {
				if strings.Contains(m.Content, "third of May") {
					return llmtest.Response{Text: "On the third of May."}
				}
			}
			return llmtest.Response{Text: "I don't know."}
		}
		return llmtest.Response{Text: "Noted!"}
	})
	model.SetTranscriber(func(tr llmtest.Transcription) (string, int) {
		if tr.Model != "whisper-1" || tr.FileName != "voice.ogg" || string(tr.Audio) != string(voice) {
			return "wrong upload", 400
		}
		return "My sister's birthday is on the third of May.", 0
	})
	env := telegramEnv(t, tg, model.URL, "RECALL_MEDIA_TRANSCRIPTION_MODEL=whisper-1")
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)

	chat := telegramtest.PrivateChat(42)
	m := &models.Message{ID: tg.MsgID(chat.ID), Date: int(time.Now().Unix()), Chat: chat,
		From:  &models.User{ID: 42, FirstName: "Ann"},
		Voice: &models.Voice{FileID: tg.AddFile("voice.ogg", voice), Duration: 3, MimeType: "audio/ogg", FileSize: int64(len(voice))}}
	tg.Push(models.Update{Message: m})
	if _, ok := tg.waitSent("🎤 heard: My sister's birthday is on the third of May.", 30*time.Second); !ok {
		t.Fatalf("no 🎤 heard line:\n%s", bot.output())
	}
	if _, ok := tg.waitSent("Noted!", 30*time.Second); !ok {
		t.Fatalf("the voice note was not answered:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, bot.output())
	}
	// The transcript is what was stored.
	if doc := env.export(t, "--key", "telegram:42:"); !strings.Contains(strings.Join(textsOf(messagesOf(doc, "telegram:42:")), "\n"), "🎤 0:03: My sister's birthday") {
		t.Fatalf("stored messages: %q", textsOf(messagesOf(doc, "telegram:42:")))
	}

	bot = env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	tg.sendText(42, "When is my sister's birthday?")
	if _, ok := tg.waitSent("On the third of May.", 30*time.Second); !ok {
		t.Fatalf("not answered from memory after a restart:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	bot.wait(30 * time.Second)
}

// With transcription off a voice note gets a clear answer saying how to turn
// it on, the model is not asked, and its arrival is in the history.
func TestVoiceNoteWithTranscriptionOff(t *testing.T) {
	tg := newFakeTelegram(t)
	model := newFakeLLM(t)
	env := telegramEnv(t, tg, model.URL)
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	chat := telegramtest.PrivateChat(42)
	tg.Push(models.Update{Message: &models.Message{ID: tg.MsgID(chat.ID), Date: int(time.Now().Unix()), Chat: chat,
		From: &models.User{ID: 42, FirstName: "Ann"}, Voice: &models.Voice{FileID: "nofile", Duration: 75}}})
	if _, ok := tg.waitSent("media.transcription.model", 30*time.Second); !ok {
		t.Fatalf("no answer saying how to turn transcription on:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	bot.wait(30 * time.Second)
	if n := len(model.chatRequests()); n != 0 {
		t.Fatalf("the model was asked %d times about a voice note it could not hear", n)
	}
	texts := textsOf(messagesOf(env.export(t, "--key", "telegram:42:"), "telegram:42:"))
	if len(texts) != 2 || !strings.HasPrefix(texts[0], "🎤 1:15 (a voice note I could not listen to)") {
		t.Fatalf("history: %q", texts)
	}
}

// sendExport sends a Telegram Desktop result.json as a document from user
// id, in a private chat.
func sendExport(tg fakeTelegram, id int64, export []byte) {
	chat := telegramtest.PrivateChat(id)
	tg.Push(models.Update{Message: &models.Message{ID: tg.MsgID(chat.ID), Date: int(time.Now().Unix()), Chat: chat,
		From:     &models.User{ID: id, FirstName: "Ann"},
		Document: &models.Document{FileID: tg.AddFile("result.json", export), FileName: "result.json", MimeType: "application/json", FileSize: int64(len(export))}}})
}

func textsOf(msgs []memory.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

// A chat export sent to the bot is offered for import, and after a yes its
// messages are in this chat's memory.
func TestChatExportSentAsADocumentIsImported(t *testing.T) {
	tg := newFakeTelegram(t)
	env := telegramEnv(t, tg, newFakeLLM(t).URL)
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	export := []byte(`{"name":"Anna","type":"personal_chat","messages":[
	 {"id":1,"type":"message","date_unixtime":"1677664860","from":"Anna","text":"The lease starts on the first of June"},
	 {"id":2,"type":"message","date_unixtime":"1677664920","from":"Ann","text":"and the deposit is two months"}]}`)
	sendExport(tg, 42, export)
	q, ok := tg.waitSent("I found 2 messages between Ann and Anna", 30*time.Second)
	if !ok {
		t.Fatalf("no import question:\n%s", bot.output())
	}
	if kb := q.Keyboard(); len(kb) == 0 {
		t.Fatalf("the question has no buttons: %+v", q.Fields)
	}
	tg.sendText(42, "yes")
	if _, ok := tg.waitSent("Imported 2 messages", 30*time.Second); !ok {
		t.Fatalf("not imported:\n%s", bot.output())
	}
	tg.sendText(42, "/search deposit")
	if _, ok := tg.waitSent("two months", 30*time.Second); !ok {
		t.Fatalf("the imported history is not searchable:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	bot.wait(30 * time.Second)
}

// A chat export holding one message over memory.MaxMessageBytes is
// imported with that message cut, and the reply says so.
func TestChatExportWithAHugeMessageSaysItWasCut(t *testing.T) {
	tg := newFakeTelegram(t)
	env := telegramEnv(t, tg, newFakeLLM(t).URL)
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	huge := strings.Repeat("lease ", 5<<20/6)
	export := []byte(`{"name":"Anna","type":"personal_chat","messages":[
	 {"id":1,"type":"message","date_unixtime":"1677664860","from":"Anna","text":"` + huge + `"},
	 {"id":2,"type":"message","date_unixtime":"1677664920","from":"Ann","text":"and the deposit is two months"}]}`)
	sendExport(tg, 42, export)
	if _, ok := tg.waitSent("I found 2 messages between Ann and Anna", 30*time.Second); !ok {
		t.Fatalf("no import question:\n%s", bot.output())
	}
	tg.sendText(42, "yes")
	if _, ok := tg.waitSent("Imported 2 messages. 1 message longer than 4 MB: I kept the first 4 MB of each.", 60*time.Second); !ok {
		t.Fatalf("the reply does not say a message was cut:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	bot.wait(30 * time.Second)
}

// A photo with a caption, sent on Telegram: the answering model sees it
// (an image part, downloaded through getFile), its description is what is
// stored (not the caption the bot stored on arrival), and after a restart a
// typed question is answered from it.
func TestPhotoIsSeenAndRemembered(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 2000, 60))
	for x := range 2000 {
		for y := range 60 {
			img.Set(x, y, color.RGBA{R: uint8(x), G: 80, B: uint8(y), A: 255})
		}
	}
	var pic bytes.Buffer
	if err := jpeg.Encode(&pic, img, nil); err != nil {
		t.Fatal(err)
	}
	tg := newFakeTelegram(t)
	model := llmtest.NewServer(t, func(r llmtest.Request) llmtest.Response {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case strings.HasPrefix(r.Messages[0].Content, llm.DescribePrompt):
			return llmtest.Response{Text: "A bottle of Barolo 2016 from Cantina Rossi on a wooden table."}
		case len(last.Images) == 1 && last.Images[0].Width == 1568 && strings.Contains(last.Content, "the wine from Friday"):
			return llmtest.Response{Text: "A lovely Barolo!"}
		case len(last.Images) > 0:
			return llmtest.Response{Text: "wrong image or text"}
		case strings.Contains(last.Content, "wine") && strings.Contains(last.Content, "?"):
			for _, m := range r.Messages[:len(r.Messages)-1] {
				if strings.Contains(m.Content, "Cantina Rossi") {
					return llmtest.Response{Text: "The Barolo 2016 from Cantina Rossi."}
				}
			}
			return llmtest.Response{Text: "I don't know."}
		}
		return llmtest.Response{Text: "Noted!"}
	})
	env := telegramEnv(t, tg, model.URL)
	bot := env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	chat := telegramtest.PrivateChat(42)
	tg.Push(models.Update{Message: &models.Message{ID: tg.MsgID(chat.ID), Date: int(time.Now().Unix()), Chat: chat,
		From: &models.User{ID: 42, FirstName: "Ann"}, Caption: "the wine from Friday",
		Photo: []models.PhotoSize{{FileID: tg.AddFile("photo.jpg", pic.Bytes()), Width: 2000, Height: 60, FileSize: pic.Len()}}}})
	if _, ok := tg.waitSent("A lovely Barolo!", 30*time.Second); !ok {
		t.Fatalf("the photo was not answered with the image:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	if code := bot.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, bot.output())
	}
	if texts := textsOf(messagesOf(env.export(t, "--key", "telegram:42:"), "telegram:42:")); len(texts) != 2 ||
		texts[0] != "📷 Photo: A bottle of Barolo 2016 from Cantina Rossi on a wooden table.\nthe wine from Friday" {
		t.Fatalf("stored messages: %q", texts)
	}
	bot = env.startDaemon(t)
	bot.waitLog("running", 30*time.Second)
	tg.sendText(42, "Which wine did I show you?")
	if _, ok := tg.waitSent("The Barolo 2016 from Cantina Rossi.", 30*time.Second); !ok {
		t.Fatalf("not answered from memory after a restart:\n%s", bot.output())
	}
	bot.signal(syscall.SIGTERM)
	bot.wait(30 * time.Second)
}
