package whatsapp

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mau.fi/whatsmeow/types"
)

// PhoneSeenFile, in data.dir, holds when the linked phone was last seen
// online (Unix seconds), across restarts.
const PhoneSeenFile = "whatsapp-phone-seen"

// phoneWarnAfter is how long the phone may stay unseen before the bot
// warns: WhatsApp unlinks companion devices after about 14 days without
// the phone.
const phoneWarnAfter = 12 * 24 * time.Hour

// phoneWatch tracks when the linked phone (the account's primary device)
// was last seen: a message or receipt it sent, an app state sync.
type phoneWatch struct {
	path string // "" keeps it in memory only

	mu    sync.Mutex
	seen  time.Time
	saved time.Time // when seen was last written
}

// newPhoneWatch reads the last sighting from dir (now when none is
// recorded: the bot cannot know better, and it was just linked or
// upgraded).
func newPhoneWatch(dir string, now time.Time) *phoneWatch {
	p := &phoneWatch{seen: now}
	if dir == "" {
		return p
	}
	p.path = filepath.Join(dir, PhoneSeenFile)
	if b, err := os.ReadFile(p.path); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			p.seen, p.saved = time.Unix(n, 0), time.Unix(n, 0)
			return p
		}
	}
	p.save(now)
	return p
}

// isPhone reports whether j is the account's phone (device 0 of the
// account, by phone number or LID).
func isPhone(me Me, j types.JID) bool { return j.Device == 0 && me.is(j) }

// saw records a sighting at t, written to disk at most once an hour.
func (p *phoneWatch) saw(t time.Time) {
	p.mu.Lock()
	if t.After(p.seen) {
		p.seen = t
	}
	write := p.path != "" && t.Sub(p.saved) >= time.Hour
	p.mu.Unlock()
	if write {
		p.save(t)
	}
}

func (p *phoneWatch) save(t time.Time) {
	if p.path == "" {
		return
	}
	tmp := p.path + ".tmp"
	if os.WriteFile(tmp, []byte(strconv.FormatInt(t.Unix(), 10)+"\n"), 0o600) == nil && os.Rename(tmp, p.path) == nil {
		p.mu.Lock()
		p.saved = t
		p.mu.Unlock()
	}
}

// problem is the warning when the phone has not been seen for too long at
// now, nil otherwise.
func (p *phoneWatch) problem(now time.Time) error {
	p.mu.Lock()
	seen := p.seen
	p.mu.Unlock()
	away := now.Sub(seen)
	if away < phoneWarnAfter {
		return nil
	}
	return fmt.Errorf("the linked phone has not been online for %d days (since %s): open WhatsApp on the phone with a network connection, "+
		"or WhatsApp unlinks Recall after about 14 days", int(away/(24*time.Hour)), seen.UTC().Format("2006-01-02"))
}
