package telegramtest

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strconv"
	"testing"
)

// post calls method with multipart fields and returns the answer's ok.
func post(t *testing.T, url string, fields map[string]string) bool {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	mw.Close()
	resp, err := http.Post(url, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		OK bool `json:"ok"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	return ans.OK
}

// A server started without a testing.TB takes its own token, tells OnSend
// of every message delivered (and only those), and may be closed twice.
func TestStartOnSendClose(t *testing.T) {
	var sent []Sent
	f := Start(Options{Token: "1:other", OnSend: func(s Sent) { sent = append(sent, s) }})
	defer f.Close()
	if post(t, f.URL+"/bot"+Token+"/getMe", nil) {
		t.Error("the default token was accepted by a server with another")
	}
	user := f.SendText(PrivateChat(42), 42, "hi")
	send := f.URL + "/bot" + f.Token + "/sendMessage"
	if !post(t, send, map[string]string{"chat_id": "42", "text": "hello", "reply_parameters": `{"message_id":` + strconv.Itoa(user) + `}`}) {
		t.Fatal("sendMessage failed")
	}
	if post(t, send, map[string]string{"chat_id": "42", "text": " "}) {
		t.Fatal("an empty message was delivered")
	}
	if len(sent) != 1 || sent[0].Chat != 42 || sent[0].Text != "hello" || sent[0].ReplyTo != user || sent[0].MsgID != user+1 || sent[0].At.IsZero() {
		t.Errorf("OnSend saw %+v; want one message to chat 42 replying to %d", sent, user)
	}
	f.Close()
	f.Close()
}
