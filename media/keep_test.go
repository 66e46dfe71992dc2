package media_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallbot/recall/media"
	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// Kept photos go with each purge scope: older than a time, one
// conversation, all of an owner's; other owners' stay.
func TestKeptPhotosFollowPurgeScopes(t *testing.T) {
	k := media.NewKept(filepath.Join(t.TempDir(), "media"))
	now := time.Now()
	a1 := pipeline.Key{Channel: "telegram", Chat: "1"}
	a2 := pipeline.Key{Channel: "telegram", Chat: "1", Thread: "9"}
	b := pipeline.Key{Channel: "telegram", Chat: "2"}
	save := func(key pipeline.Key, at time.Time, id string) string {
		p, err := k.Save(key, at, id, []byte("\xff\xd8\xff photo "+id))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := save(a1, now.AddDate(0, 0, -40), "../../old")
	recent := save(a1, now, "2")
	thread := save(a2, now, "3")
	other := save(b, now.AddDate(0, 0, -40), "4")
	if filepath.Dir(old) != filepath.Dir(recent) || !filepath.IsLocal(mustRel(t, k.Dir(), old)) {
		t.Fatalf("a platform id made the path %s", old)
	}
	purge := func(s memory.PurgeScope, want int) {
		t.Helper()
		if n, err := k.Purge(s); err != nil || n != want {
			t.Fatalf("purge %+v: %d removed, %v; want %d", s, n, err, want)
		}
	}
	purge(memory.PurgeScope{Owner: a1.Owner(), OlderThan: now.AddDate(0, 0, -30)}, 1)
	purge(memory.PurgeScope{Owner: a1.Owner(), Key: a2}, 1)
	for p, want := range map[string]bool{old: false, recent: true, thread: false, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
	purge(memory.PurgeScope{Owner: a1.Owner()}, 1)
	purge(memory.PurgeScope{Owner: a1.Owner()}, 0)
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another owner's photo went: %v", err)
	}
	// Retention: every owner's photos older than the cut.
	if n, err := k.PurgeOlder(now.AddDate(0, 0, -30)); err != nil || n != 1 {
		t.Fatalf("retention removed %d, %v; want the other owner's old photo", n, err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("the old photo is still there: %v", err)
	}
}

func mustRel(t *testing.T, base, p string) string {
	t.Helper()
	r, err := filepath.Rel(base, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
