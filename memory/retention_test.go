package memory

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Retention counts calendar days back from now. memory.retention_days =
// 12,169,727 once became a duration that wrapped to about ten minutes and
// purged a whole archive at start; any number of days, however large, keeps
// what is younger than it.
func TestRetentionDaysEdges(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	ages := []int{2, 10, 400, 90 * 365} // days old
	for _, tc := range []struct {
		days int
		kept []int // ages kept
	}{
		{0, ages},
		{-5, ages},
		{3, []int{2}},
		{365, []int{2, 10}},
		{36500, ages},
		{12169727, ages},
		{math.MaxInt, ages},
	} {
		t.Run(fmt.Sprint(tc.days), func(t *testing.T) {
			s := openStore(t, t.TempDir())
			key := pipeline.Key{Channel: "telegram", Chat: "1"}
			for i, age := range ages {
				at := now.AddDate(0, 0, -age).Add(time.Minute) // a minute younger than age days
				if err := s.Append(ctx, Message{Key: key, Role: RoleUser, PlatformID: fmt.Sprint(i), Text: fmt.Sprintf("%d days old", age), Time: at}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.ApplyRetention(ctx, tc.days); err != nil {
				t.Fatal(err)
			}
			d, err := s.Export(ctx, key.Owner(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range d.Conversations {
				for _, m := range c.Messages {
					got = append(got, m.Text)
				}
			}
			var want []string
			for _, age := range tc.kept {
				want = append(want, fmt.Sprintf("%d days old", age))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("retention %d days kept %q, want %q", tc.days, got, want)
			}
		})
	}
}
