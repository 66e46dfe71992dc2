package telegram

import (
	"context"
	"sync"
	"time"

	"github.com/recallbot/recall/pipeline"
)

// Defaults of the text-only notice's gate.
const (
	// DefaultNoticeEvery is the least time between two text-only notices
	// in one chat: a burst of stickers or photos gets one.
	DefaultNoticeEvery = 3 * time.Minute
	// DefaultAlbumWait is how long the notice for an item of an album
	// waits for the album's other items: Telegram sends each as its own
	// message, and when one has a caption the album is answered instead.
	DefaultAlbumWait = 2 * time.Second
	// maxNoticeMemory bounds the albums and chats the gate remembers.
	maxNoticeMemory = 10000
)

// noticeGate decides which media messages get the text-only notice: at
// most one per album (media_group_id), none when an item of the album has
// a caption (that caption is answered), and at most one per chat every
// DefaultNoticeEvery. It remembers at most maxNoticeMemory albums and chats.
type noticeGate struct {
	every     time.Duration
	albumWait time.Duration

	mu        sync.Mutex
	albums    map[string]bool // media group id → answered (a caption) or noticed
	albumList []string        // insertion order, for the bound
	firsts    map[string]bool // albums whose first item without caption was seen
	firstList []string        // insertion order, for the bound
	last      map[pipeline.Key]time.Time
}

func newNoticeGate() *noticeGate {
	return &noticeGate{every: DefaultNoticeEvery, albumWait: DefaultAlbumWait,
		albums: map[string]bool{}, last: map[pipeline.Key]time.Time{}}
}

// covered marks an album as taken care of: an item had a caption (it is
// answered), or a notice went out for it.
func (g *noticeGate) covered(album string) {
	if album == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.coverLocked(album)
}

func (g *noticeGate) coverLocked(album string) {
	if g.albums[album] {
		return
	}
	g.albums[album] = true
	g.albumList = append(g.albumList, album)
	if len(g.albumList) > maxNoticeMemory {
		delete(g.albums, g.albumList[0])
		g.albumList = g.albumList[1:]
	}
}

// firstOf reports whether this is the first item without caption seen of
// album (items arrive in order: only the first may answer the album).
func (g *noticeGate) firstOf(album string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.firsts == nil {
		g.firsts = map[string]bool{}
	}
	if g.firsts[album] {
		return false
	}
	g.firsts[album] = true
	g.firstList = append(g.firstList, album)
	if len(g.firstList) > maxNoticeMemory {
		delete(g.firsts, g.firstList[0])
		g.firstList = g.firstList[1:]
	}
	return true
}

// claim marks album as taken care of and reports whether it was not yet
// (so exactly one of its items is answered).
func (g *noticeGate) claim(album string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.albums[album] {
		return false
	}
	g.coverLocked(album)
	return true
}

// wait gives the other items of an album time to arrive; false when ctx
// ended first.
func (g *noticeGate) wait(ctx context.Context, album string) bool {
	if album == "" || g.albumWait <= 0 {
		return true
	}
	return sleep(ctx, g.albumWait)
}

// allow reports whether key gets a notice now for a message of album (""
// when not in one), and records it.
func (g *noticeGate) allow(key pipeline.Key, album string) bool {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if album != "" && g.albums[album] {
		return false
	}
	if t, ok := g.last[key]; ok && now.Sub(t) < g.every {
		return false
	}
	if len(g.last) >= maxNoticeMemory {
		for k, t := range g.last {
			if now.Sub(t) >= g.every {
				delete(g.last, k)
			}
		}
	}
	if len(g.last) < maxNoticeMemory {
		g.last[key] = now
	}
	if album != "" {
		g.coverLocked(album)
	}
	return true
}
