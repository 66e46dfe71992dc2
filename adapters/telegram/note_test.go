package telegram

import (
	"context"
	"testing"

	"github.com/recallbot/recall/pipeline"
)

// A slow answer's "still thinking" note is a message the bot deletes again
// once the answer comes (chat.WaitNoter).
func TestWaitNoteIsDeleted(t *testing.T) {
	api := newFakeAPI(t)
	st := newStack(t, api, stackOptions{})
	noter, ok := st.ad.Sender().(interface {
		ShowWaitNote(ctx context.Context, key pipeline.Key, text string) (func(context.Context) error, error)
	})
	if !ok {
		t.Fatal("the Telegram sender shows no wait note")
	}
	remove, err := noter.ShowWaitNote(t.Context(), key(111, ""), "⏳ still thinking…")
	if err != nil {
		t.Fatal(err)
	}
	sent := api.Calls("sendMessage")
	if len(sent) != 1 || sent[0].Fields["text"] != "⏳ still thinking…" {
		t.Fatalf("sent %+v", sent)
	}
	if err := remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	del := api.Calls("deleteMessage")
	if len(del) != 1 || del[0].Err != nil || del[0].MsgID != sent[0].MsgID {
		t.Fatalf("deleted %+v, want message %d", del, sent[0].MsgID)
	}
}
