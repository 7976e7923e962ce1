package budget

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Store keeps what each budget key has spent in its current window. A
// Store shared by several processes (on disk, in Redis) makes each method
// one atomic step, so that the reservations of many processes never spend
// past a limit together.
//
// A key holds one window at a time: a call for a later window than the
// one held starts the key afresh, and a call for an earlier one (a permit
// settled after its window ended) changes nothing, as that window's
// account is closed.
type Store interface {
	// Reserve adds cost to key's spend in the window that starts at
	// window if the spend stays within limit, and returns the spend after
	// it; otherwise it adds nothing and returns the spend with ok false.
	Reserve(ctx context.Context, key string, window time.Time, cost, limit int64) (spent int64, ok bool, err error)
	// Adjust adds delta to key's spend in that window, whatever the
	// limit (a negative delta gives back, never below zero), and returns
	// the spend after it.
	Adjust(ctx context.Context, key string, window time.Time, delta int64) (spent int64, err error)
	// Spent returns key's spend in that window.
	Spent(ctx context.Context, key string, window time.Time) (int64, error)
	// Entries returns every key the store holds, with its window and
	// spend, sorted by key: what `throttle budget` shows.
	Entries(ctx context.Context) ([]Entry, error)
	// Reset forgets key, so that its spend starts again from zero.
	Reset(ctx context.Context, key string) error
}

// Entry is what a Store holds for one key.
type Entry struct {
	Key    string
	Window time.Time // the start of the window the spend is for
	Spent  int64
}

// Memory is a Store held in this process's memory: spend that a restart
// loses. The zero Memory is not usable: use NewMemory.
type Memory struct {
	mu   sync.Mutex
	keys map[string]*Entry
}

// NewMemory returns an empty Memory store.
func NewMemory() *Memory { return &Memory{keys: make(map[string]*Entry)} }

// entry returns key's entry for window, started afresh for a later window;
// nil for an earlier one. Called with m.mu held.
func (m *Memory) entry(key string, window time.Time) *Entry {
	e := m.keys[key]
	switch {
	case e == nil || e.Window.Before(window):
		e = &Entry{Key: key, Window: window}
		m.keys[key] = e
	case window.Before(e.Window):
		return nil
	}
	return e
}

// Reserve implements Store.
func (m *Memory) Reserve(_ context.Context, key string, window time.Time, cost, limit int64) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(key, window)
	if e == nil {
		return 0, false, nil
	}
	if cost > limit-e.Spent {
		return e.Spent, false, nil
	}
	e.Spent += cost
	return e.Spent, true, nil
}

// Adjust implements Store.
func (m *Memory) Adjust(_ context.Context, key string, window time.Time, delta int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(key, window)
	if e == nil {
		return 0, nil
	}
	e.Spent = max(0, e.Spent+delta)
	return e.Spent, nil
}

// Spent implements Store.
func (m *Memory) Spent(_ context.Context, key string, window time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.keys[key]; e != nil && e.Window.Equal(window) {
		return e.Spent, nil
	}
	return 0, nil
}

// Entries implements Store.
func (m *Memory) Entries(context.Context) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Entry, 0, len(m.keys))
	for _, e := range m.keys {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Reset implements Store.
func (m *Memory) Reset(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, key)
	return nil
}
