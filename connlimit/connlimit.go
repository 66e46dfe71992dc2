// Package connlimit caps the connections an HTTP server holds, so that a
// flood of connections that send nothing (or keep a request half-written)
// cannot use up the process's file descriptors and lock real requests out.
//
// At the cap, a new connection takes the place of the oldest one that is
// not in the middle of a request (new and silent, or idle between
// requests), which is closed. Only when every connection is busy with a
// request is the new one closed instead. Busy connections are bounded by the
// server's ReadTimeout and WriteTimeout; silent ones by ReadHeaderTimeout
// and IdleTimeout, which a server using this must set as well (Server does).
//
// Not golang.org/x/net/netutil.LimitListener: at its cap it stops
// accepting, so real connections wait behind the flood until timeouts free
// slots (30–45 s per webhook request with 300 silent connections and a cap
// of 32, against milliseconds here; DEVELOPERS.md, "What stays hand-made").
package connlimit

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Guard tracks the connections of one server. Use Listener for Serve and
// ConnState as the server's ConnState hook (Server does both).
type Guard struct {
	max int

	mu    sync.Mutex
	conns map[net.Conn]*entry
	seq   uint64
}

type entry struct {
	busy bool   // a request is being read or answered
	seq  uint64 // order of the last change to waiting, oldest first
}

// New returns a guard allowing at most n connections (at least 1).
func New(n int) *Guard {
	return &Guard{max: max(n, 1), conns: map[net.Conn]*entry{}}
}

// Open is the number of connections held now.
func (g *Guard) Open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// Listener wraps ln: every accepted connection is counted, and one over the
// cap closes the oldest waiting connection (or itself when none waits).
func (g *Guard) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, g: g} }

type listener struct {
	net.Listener
	g *Guard
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.g.admit(c) {
			return c, nil
		}
		c.Close() // every connection is busy with a request
	}
}

// admit counts c, making room by closing the oldest waiting connection;
// false when there is no room.
func (g *Guard) admit(c net.Conn) bool {
	g.mu.Lock()
	var victim net.Conn
	if len(g.conns) >= g.max {
		var oldest *entry
		for k, e := range g.conns {
			if !e.busy && (oldest == nil || e.seq < oldest.seq) {
				victim, oldest = k, e
			}
		}
		if victim == nil {
			g.mu.Unlock()
			return false
		}
		delete(g.conns, victim)
	}
	g.seq++
	g.conns[c] = &entry{seq: g.seq}
	g.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
	return true
}

// ConnState follows the server's connections (http.Server.ConnState).
func (g *Guard) ConnState(c net.Conn, s http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.conns[c]
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, c)
	case http.StateActive:
		if ok {
			e.busy = true
		}
	case http.StateIdle:
		if ok {
			g.seq++
			e.busy, e.seq = false, g.seq
		}
	}
}

// Timeouts every server behind a Guard uses (Server sets them).
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 60 * time.Second
)

// Server returns an http.Server for h with the timeouts above and its
// connections capped at n; serve it with srv.Serve(g.Listener(ln)).
func Server(h http.Handler, n int) (*http.Server, *Guard) {
	g := New(n)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ConnState:         g.ConnState,
	}, g
}
