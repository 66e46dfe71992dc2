package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// cachedOwners lists the loaded owners, most recently used first.
func (j *JSON) cachedOwners() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for e := j.lru.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*jsonOwner).name)
	}
	return out
}

// ownerKey is the private chat of owner telegram:<id>.
func ownerKey(id string) pipeline.Key { return pipeline.Key{Channel: "telegram", Chat: id} }

// say stores exchange i of owner telegram:<id>.
func say(t *testing.T, j *JSON, id string, i int) {
	t.Helper()
	if err := exchangeJSON(j, id, i); err != nil {
		t.Fatal(err)
	}
}

func exchangeJSON(j *JSON, id string, i int) error {
	k := ownerKey(id)
	pid := fmt.Sprint(i)
	_, err := j.Append(context.Background(), []Message{
		{Key: k, Role: RoleUser, SenderID: id, PlatformID: pid, Text: "message " + pid + " of " + id, Time: time.Now()},
		{Key: k, Role: RoleAssistant, ReplyTo: pid, Text: "reply " + pid, Time: time.Now()},
	})
	return err
}

// The owners' cache keeps the most recently used owners within its bound;
// an owner dropped from it is read again from its file, complete.
func TestJSONCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	j, err := OpenJSON(filepath.Join(t.TempDir(), "json"))
	if err != nil {
		t.Fatal(err)
	}
	j.most = 2
	for _, o := range []string{"1", "2", "3"} {
		say(t, j, o, 1)
	}
	if got := j.cachedOwners(); !slices.Equal(got, []string{"telegram:3", "telegram:2"}) {
		t.Fatalf("cached owners %v, want the last two used: [telegram:3 telegram:2]", got)
	}
	// Reading 2 makes it the most recent: 3 goes when 1 comes back.
	if _, err := j.Recent(ctx, ownerKey("2"), 0, 0); err != nil {
		t.Fatal(err)
	}
	msgs, err := j.Recent(ctx, ownerKey("1"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Text != "message 1 of 1" {
		t.Errorf("owner 1 read again from its file: %+v", msgs)
	}
	if got := j.cachedOwners(); !slices.Equal(got, []string{"telegram:1", "telegram:2"}) {
		t.Errorf("cached owners %v, want [telegram:1 telegram:2]", got)
	}
	if n := len(j.owners); n != 2 {
		t.Errorf("%d owner entries kept, want 2", n)
	}

	// The size bound: a limit under one owner's file keeps none cached
	// once they are not in use, and every write still lands.
	j.limit = 1
	for i := 2; i <= 5; i++ {
		say(t, j, "1", i)
	}
	if got := j.cachedOwners(); len(got) != 0 {
		t.Errorf("cached owners %v over a 1-byte bound", got)
	}
	if j.cached != 0 {
		t.Errorf("%d bytes counted as cached with none cached", j.cached)
	}
	st, err := j.Status(ctx, ownerKey("1"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 10 {
		t.Errorf("owner 1 holds %d messages, want 10", st.Total)
	}
}

// Writers of one owner never race through two cache entries, even when the
// cache drops every owner as soon as it is not in use: no write is lost and
// no id is given twice.
func TestJSONCacheEvictionKeepsWritesSerial(t *testing.T) {
	ctx := context.Background()
	j, err := OpenJSON(filepath.Join(t.TempDir(), "json"))
	if err != nil {
		t.Fatal(err)
	}
	j.limit, j.most = 0, 1
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := exchangeJSON(j, []string{"a", "b"}[i%2], w*100+i); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, o := range []string{"a", "b"} {
		msgs, err := j.Active(ctx, ownerKey(o))
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != writers*each {
			t.Errorf("owner %s holds %d messages, want %d", o, len(msgs), writers*each)
		}
		ids := map[int64]bool{}
		for _, m := range msgs {
			if ids[m.ID] {
				t.Errorf("owner %s: id %d given twice", o, m.ID)
			}
			ids[m.ID] = true
		}
	}
}
