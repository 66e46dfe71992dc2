package whatsapp

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Sending pace, to stay clear of WhatsApp's anti-spam bans: at most
// sendPerMinute messages a minute over all chats (bursts of sendBurst), and
// a pause of partGap plus up to half of it again between the parts of one
// reply, as a person typing them would leave.
const (
	sendPerMinute = 30
	sendBurst     = 10
	partGap       = time.Second
)

// pacer is a token bucket of messages: reserve says how long the next
// message waits.
type pacer struct {
	perMinute, burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newPacer(perMinute, burst int) *pacer {
	return &pacer{perMinute: float64(perMinute), burst: float64(burst), tokens: float64(burst)}
}

// reserve takes one message from the budget at now and returns how long
// the caller waits before sending it (0 within the budget).
func (p *pacer) reserve(now time.Time) time.Duration {
	if p == nil || p.perMinute <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.last.IsZero() {
		p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Minutes()*p.perMinute)
	}
	p.last = now
	p.tokens--
	if p.tokens >= 0 {
		return 0
	}
	return time.Duration(-p.tokens / p.perMinute * float64(time.Minute))
}

// gap is the pause before part i (0-based) of a reply.
func (a *Adapter) gap(i int) time.Duration {
	if i == 0 || a.partGap <= 0 {
		return 0
	}
	return a.partGap + rand.N(a.partGap/2+1)
}
