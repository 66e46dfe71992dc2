package whatsapp

import (
	"container/list"
	"sync"
)

// lru is a bounded map that forgets the least recently added entries. It is
// safe for concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	items map[K]*list.Element
	order *list.List // of entry[K, V], newest at the front
}

type entry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, items: make(map[K]*list.Element), order: list.New()}
}

// add stores v under k; false when k was there already (its value is kept).
func (l *lru[K, V]) add(k K, v V) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.items[k]; ok {
		return false
	}
	l.items[k] = l.order.PushFront(entry[K, V]{k, v})
	for l.order.Len() > l.max {
		oldest := l.order.Back()
		l.order.Remove(oldest)
		delete(l.items, oldest.Value.(entry[K, V]).k)
	}
	return true
}

func (l *lru[K, V]) get(k K) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[k]; ok {
		return e.Value.(entry[K, V]).v, true
	}
	var zero V
	return zero, false
}

// remove forgets k.
func (l *lru[K, V]) remove(k K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[k]; ok {
		l.order.Remove(e)
		delete(l.items, k)
	}
}
