package memory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// TestSearchFactsByTagAndTime is seed 001's metadata search on both
// backends: facts are found by words, by tag, by when they were learned,
// and only from the asked conversation (plus those that name none).
func TestSearchFactsByTagAndTime(t *testing.T) {
	for _, storage := range []Storage{StorageSQLite, StorageJSON} {
		t.Run(string(storage), func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, t.TempDir())
			k := pipeline.Key{Channel: "telegram", Chat: "42"}
			other := pipeline.Key{Channel: "telegram", Chat: "42", Thread: "9"}
			owner := k.Owner()
			must(t, s.PutSettings(ctx, Settings{Owner: owner, Storage: storage, Threshold: 10, MemoryEnabled: true}))
			day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 12, 0, 0, 0, time.UTC) }
			for _, f := range []Fact{
				{Content: "Ann's sister has her birthday on 3 May", Key: k.String(), Tags: []string{"personal"}, Created: day(3, 2)},
				{Content: "Ann decided to rent the flat on Elm Street", Key: k.String(), Tags: []string{"decision"}, Created: day(3, 20)},
				{Content: "Ann prefers tea to coffee", Key: k.String(), Tags: []string{"preference"}, Created: day(4, 5)},
				{Content: "Ann wants to run a marathon in autumn", Key: other.String(), Tags: []string{"goal"}, Created: day(3, 10)},
				{Content: "Ann lives in Porto", Tags: []string{"Personal"}, Created: day(1, 10)},
			} {
				if _, _, err := s.AddFact(ctx, owner, f); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				name string
				q    FactQuery
				want []string
			}{
				{"by tag, any case", FactQuery{Tag: "PERSONAL"}, []string{"Ann's sister has her birthday on 3 May", "Ann lives in Porto"}},
				{"by tag and words", FactQuery{Tag: "personal", Text: "birthday"}, []string{"Ann's sister has her birthday on 3 May"}},
				{"by time", FactQuery{From: day(3, 1), To: day(4, 1)}, []string{"Ann decided to rent the flat on Elm Street", "Ann wants to run a marathon in autumn", "Ann's sister has her birthday on 3 May"}},
				{"by time in this conversation", FactQuery{Key: k.String(), From: day(3, 1), To: day(4, 1)}, []string{"Ann decided to rent the flat on Elm Street", "Ann's sister has her birthday on 3 May"}},
				{"by words", FactQuery{Text: "marathon"}, []string{"Ann wants to run a marathon in autumn"}},
				{"by words, another conversation's left out", FactQuery{Key: k.String(), Text: "marathon"}, nil},
				{"a tag no fact has", FactQuery{Tag: "health"}, nil},
				{"limit", FactQuery{Limit: 2}, []string{"Ann prefers tea to coffee", "Ann decided to rent the flat on Elm Street"}},
			} {
				got, err := s.SearchFacts(ctx, owner, tc.q)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				var contents []string
				for _, f := range got {
					contents = append(contents, f.Content)
				}
				if !slices.Equal(contents, tc.want) {
					t.Errorf("%s: got %q, want %q", tc.name, contents, tc.want)
				}
			}
		})
	}
}
