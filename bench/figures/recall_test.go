package figures

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/recallbot/recall/llm"
	"github.com/recallbot/recall/llm/llmtest"
)

// TestEvidenceIDs: REALTALK's evidence lists in all the shapes its files
// use become plain dia_ids.
func TestEvidenceIDs(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string
	}{
		{[]string{"D1:6", "D3:69"}, []string{"D1:6", "D3:69"}},
		{[]string{"D 2:18"}, []string{"D2:18"}},
		{[]string{"23:29"}, []string{"D23:29"}},
		{[]string{"D13:4. D14:4"}, []string{"D13:4", "D14:4"}},
		{[]string{"D14:8-D14:10;D15:16"}, []string{"D14:8", "D14:9", "D14:10", "D15:16"}},
		{[]string{"D1:2-D3:4", "nonsense", ""}, nil}, // a range across sessions is not expanded
	} {
		if got := EvidenceIDs(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("EvidenceIDs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSelectRecallChats: --chats keeps the chats by the number in their
// file name, as numbers and ranges; a spec that is not one, or selects
// nothing, is an error that says so.
func TestSelectRecallChats(t *testing.T) {
	var chats []RecallChat
	for _, n := range []string{"Chat_1_Ana_Ben", "Chat_2_Ben_Cy", "Chat_10_Cy_Dee", "Chat_6_Dee_Eve"} {
		chats = append(chats, RecallChat{Name: n})
	}
	names := func(cs []RecallChat) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for spec, want := range map[string][]string{
		"":      {"Chat_1_Ana_Ben", "Chat_2_Ben_Cy", "Chat_10_Cy_Dee", "Chat_6_Dee_Eve"},
		"1-5":   {"Chat_1_Ana_Ben", "Chat_2_Ben_Cy"},
		"6-10":  {"Chat_10_Cy_Dee", "Chat_6_Dee_Eve"},
		"1, 10": {"Chat_1_Ana_Ben", "Chat_10_Cy_Dee"},
	} {
		got, err := SelectRecallChats(chats, spec)
		if err != nil || !reflect.DeepEqual(names(got), want) {
			t.Errorf("SelectRecallChats(%q) = %q, %v; want %q", spec, names(got), err, want)
		}
	}
	for _, spec := range []string{"x", "5-1", "3", "1-"} {
		if _, err := SelectRecallChats(chats, spec); err == nil {
			t.Errorf("SelectRecallChats(%q): no error", spec)
		}
	}
}

// TestRecallFixture: the figure reads the top-level chats only (the
// fixture's locomo/ subfolder holds a file that would not even parse),
// imports them, and scores each question that has evidence in the chat.
func TestRecallFixture(t *testing.T) {
	chats, err := LoadRecallChats("testdata/realtalk")
	if err != nil {
		t.Fatal(err)
	}
	if len(chats) != 1 || len(chats[0].Turns) != 7 || len(chats[0].Questions) != 3 {
		t.Fatalf("loaded %+v", chats)
	}
	if tt := chats[0].Turns[4]; tt.ID != "D2:1" || tt.Speaker != "Ana" || tt.Time.Format("2006-01-02 15:04") != "2024-01-07 10:00" {
		t.Errorf("fifth turn %+v", tt)
	}
	res, err := Recall(context.Background(), chats, RecallOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ours.Questions != 2 || res.Baseline.Questions != 2 {
		t.Fatalf("scored %d and %d questions, want the 2 with evidence in the chat", res.Ours.Questions, res.Baseline.Questions)
	}
	if res.Ours.ByCategory["1"] != 1 || res.Ours.AnyFound != 1 {
		t.Errorf("ours: %+v; the climbing gym and the cake are both found", res.Ours)
	}
	if res.Ours.Tokens <= 0 || len(res.Ours.Latency) != 2 {
		t.Errorf("ours: %v tokens, %d latencies", res.Ours.Tokens, len(res.Ours.Latency))
	}
}

// TestRecallMultiLineTurn: a turn written on several lines is found when
// the prompt carries it (on one line, as snippets show every message).
func TestRecallMultiLineTurn(t *testing.T) {
	day := time.Date(2024, 1, 7, 10, 0, 0, 0, time.UTC)
	chats := []RecallChat{{
		Name: "Chat_1_Ana_Bo",
		Turns: []RecallTurn{
			{ID: "D1:1", Speaker: "Ana", Text: "what did you bake?", Time: day},
			{ID: "D1:2", Speaker: "Bo", Text: "A lemon cake.\n\nWith  poppy seeds!", Time: day.Add(time.Minute)},
		},
		Questions: []RecallQuestion{{Question: "What kind of cake did Bo bake?", Evidence: []string{"D1:2"}, Category: "1"}},
	}}
	res, err := Recall(context.Background(), chats, RecallOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ours.Recall != 1 || res.Baseline.Recall != 1 {
		t.Errorf("recall %v (baseline %v), want 1: the lemon cake is in both", res.Ours.Recall, res.Baseline.Recall)
	}
}

// With an embeddings endpoint the recall run scores hybrid retrieval too
// (here the fake endpoint: the figure means something only with a real
// model).
func TestRecallFixtureWithEmbeddings(t *testing.T) {
	chats, err := LoadRecallChats("testdata/realtalk")
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t, llmtest.Echo(""))
	e, err := llm.NewEmbedder(llm.EmbedderOptions{BaseURL: srv.URL, Model: "fake-embed"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Recall(context.Background(), chats, RecallOptions{Dir: t.TempDir(), Embeddings: e})
	if err != nil {
		t.Fatal(err)
	}
	if res.Hybrid == nil || res.Hybrid.Questions != 2 || res.Hybrid.AnyFound != 1 {
		t.Fatalf("hybrid: %+v", res.Hybrid)
	}
	if srv.EmbeddedTexts() < 7 {
		t.Errorf("%d texts embedded, want the chat's 7 turns and the questions", srv.EmbeddedTexts())
	}
}
