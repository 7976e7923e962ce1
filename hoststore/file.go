package hoststore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sync"
)

// The file holds a header and a table of fixed-size records, found by the
// hash of their key and linear probing. Records never move and are never
// removed (Reset zeroes a record's state), so a process caches where each
// key lives.
const (
	recSize     = 128
	maxKey      = 80
	defaultSize = 4096 // records
	magic       = "throttle hoststore v1\x00"
)

// The kinds of record.
const (
	kindLimiter = 1
	kindBudget  = 2
)

// ErrCorrupt is the error of a store file that is not one, or whose record
// fails its checksum.
var ErrCorrupt = errors.New("hoststore: corrupt store file")

// record is one key's state: three numbers whose meaning is its kind's.
type record struct {
	kind    byte
	key     string
	a, b, c int64
}

// Store is the file of a host's shared limits and budgets. Open it once
// per process; its methods are safe for concurrent use.
type Store struct {
	path  string
	f     *os.File
	lock  *os.File         // the lock file, held open: its lock (lock_unix.go, lock_windows.go) orders the host's processes
	mu    sync.Mutex       // the flock is the process's: goroutines take turns here first
	slots map[string]int64 // key → record offset
	n     int64            // records in the table
}

// Open opens the store file at path, creating it (and its lock file,
// path+".lock") if it does not exist.
func Open(path string) (*Store, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hoststore: %w", err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("hoststore: %w", err)
	}
	s := &Store{path: path, f: f, lock: lock, slots: make(map[string]int64)}
	if err := s.locked(s.init); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the store file.
func (s *Store) Close() error { return errors.Join(s.f.Close(), s.lock.Close()) }

// Path returns the store file's path.
func (s *Store) Path() string { return s.path }

// init writes the header and an empty table into a new file, or reads the
// header of an existing one.
func (s *Store) init() error {
	var h [recSize]byte
	_, err := s.f.ReadAt(h[:], 0)
	switch {
	case errors.Is(err, io.EOF):
		copy(h[:], magic)
		binary.LittleEndian.PutUint64(h[64:], defaultSize)
		if err := s.f.Truncate(recSize * (defaultSize + 1)); err != nil {
			return fmt.Errorf("hoststore: %w", err)
		}
		if _, err := s.f.WriteAt(h[:], 0); err != nil {
			return fmt.Errorf("hoststore: %w", err)
		}
	case err != nil:
		return fmt.Errorf("hoststore: %w", err)
	case string(h[:len(magic)]) != magic:
		return fmt.Errorf("%w: %s has no hoststore header", ErrCorrupt, s.path)
	}
	s.n = int64(binary.LittleEndian.Uint64(h[64:]))
	if s.n <= 0 || s.n > 1<<24 {
		return fmt.Errorf("%w: %s says it holds %d records", ErrCorrupt, s.path, s.n)
	}
	return nil
}

// locked runs f holding the process's mutex and the host's file lock.
func (s *Store) locked(f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := lockFile(s.lock); err != nil {
		return fmt.Errorf("hoststore: locking %s: %w", s.lock.Name(), err)
	}
	defer unlockFile(s.lock)
	return f()
}

// update reads key's record (of kind; a new one is zero), lets f change
// it, and writes it back if f says so, all under the lock.
func (s *Store) update(key string, kind byte, f func(r *record) (write bool, err error)) error {
	if len(key) == 0 || len(key) > maxKey {
		return fmt.Errorf("hoststore: key %q: want 1 to %d bytes", key, maxKey)
	}
	return s.locked(func() error {
		off, r, err := s.find(key)
		if err != nil {
			return err
		}
		if r.kind != 0 && r.kind != kind {
			return fmt.Errorf("hoststore: key %q is a %s, not a %s", key, kindName(r.kind), kindName(kind))
		}
		r.kind, r.key = kind, key
		write, err := f(&r)
		if err != nil || !write {
			return err
		}
		return s.write(off, r)
	})
}

func kindName(k byte) string {
	if k == kindLimiter {
		return "limiter"
	}
	return "budget"
}

// find returns the offset of key's record and the record, zero if key
// has none yet (the offset is then the empty slot it will take).
func (s *Store) find(key string) (int64, record, error) {
	if off, ok := s.slots[key]; ok {
		r, err := s.read(off)
		return off, r, err
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	start := int64(h.Sum64() % uint64(s.n))
	for i := range s.n {
		off := recSize * (1 + (start+i)%s.n)
		r, err := s.read(off)
		if err != nil {
			return 0, record{}, err
		}
		if r.kind == 0 || r.key == key {
			if r.kind != 0 {
				s.slots[key] = off
			}
			return off, r, nil
		}
	}
	return 0, record{}, fmt.Errorf("hoststore: %s is full (%d keys)", s.path, s.n)
}

// read reads the record at off; an empty slot is the zero record.
func (s *Store) read(off int64) (record, error) {
	var b [recSize]byte
	if _, err := s.f.ReadAt(b[:], off); err != nil {
		return record{}, fmt.Errorf("hoststore: reading %s: %w", s.path, err)
	}
	if b[0] == 0 {
		return record{}, nil
	}
	if binary.LittleEndian.Uint64(b[120:]) != checksum(b[:120]) {
		return record{}, fmt.Errorf("%w: %s: the record at %d fails its checksum", ErrCorrupt, s.path, off)
	}
	n := int(b[1])
	if n == 0 || n > maxKey {
		return record{}, fmt.Errorf("%w: %s: the record at %d has a key of %d bytes", ErrCorrupt, s.path, off, n)
	}
	return record{kind: b[0], key: string(b[8 : 8+n]),
		a: int64(binary.LittleEndian.Uint64(b[88:])),
		b: int64(binary.LittleEndian.Uint64(b[96:])),
		c: int64(binary.LittleEndian.Uint64(b[104:]))}, nil
}

// write writes r at off in one pwrite, so that a process killed around
// it leaves the old record or the new, never half of each.
func (s *Store) write(off int64, r record) error {
	var b [recSize]byte
	b[0], b[1] = r.kind, byte(len(r.key))
	copy(b[8:88], r.key)
	binary.LittleEndian.PutUint64(b[88:], uint64(r.a))
	binary.LittleEndian.PutUint64(b[96:], uint64(r.b))
	binary.LittleEndian.PutUint64(b[104:], uint64(r.c))
	binary.LittleEndian.PutUint64(b[120:], checksum(b[:120]))
	if _, err := s.f.WriteAt(b[:], off); err != nil {
		return fmt.Errorf("hoststore: writing %s: %w", s.path, err)
	}
	s.slots[r.key] = off
	return nil
}

func checksum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// records returns every record of kind, in table order.
func (s *Store) records(kind byte) ([]record, error) {
	var out []record
	err := s.locked(func() error {
		for i := range s.n {
			r, err := s.read(recSize * (1 + i))
			if err != nil {
				return err
			}
			if r.kind == kind {
				out = append(out, r)
			}
		}
		return nil
	})
	return out, err
}
