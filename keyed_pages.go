package throttle

import "slices"

// A shard's entries are kept in pages of pageSize, so that adding a key
// never copies the others and the storage is never more than a page above
// what the keys need: the first page doubles up to pageSize, as a small
// shard's slice would, and each page after it is made whole. A page is 32
// KB or more (1,024 entries of 32 bytes or more): a large object, which
// the runtime keeps with no header of its own, so it takes exactly its
// size (a page of 16 KB would take 18 KB, its header pushing it into the
// next size class). A drop moves the last entry into the hole (see
// shard.drop), so the entries stay dense, and a page left empty is let go
// of, but for one spare so that a shard at a page's edge does not make and
// drop one on each call.
const (
	pageBits = 10
	pageSize = 1 << pageBits
)

type entries[K comparable] struct {
	pages [][]entry[K]
	n     int
}

// at returns entry i, which must be below n.
func (es *entries[K]) at(i int) *entry[K] { return &es.pages[i>>pageBits][i&(pageSize-1)] }

// push adds e after the others and returns its position.
func (es *entries[K]) push(e entry[K]) int {
	i := es.n
	es.n++
	if i < pageSize {
		if len(es.pages) == 0 {
			es.pages = [][]entry[K]{nil}
		}
		if p := es.pages[0]; len(p) == cap(p) {
			// Exactly double, not append's growth, so that the full first
			// page is exactly pageSize.
			es.pages[0] = make([]entry[K], len(p), min(max(2*cap(p), 8), pageSize))
			copy(es.pages[0], p)
		}
		es.pages[0] = append(es.pages[0], e)
		return i
	}
	if p := i >> pageBits; p == len(es.pages) {
		es.pages = append(es.pages, make([]entry[K], pageSize))
	}
	*es.at(i) = e
	return i
}

// pop removes the last entry, letting go of its key and profile.
func (es *entries[K]) pop() {
	es.n--
	*es.at(es.n) = entry[K]{}
	if es.n < pageSize {
		es.pages[0] = es.pages[0][:es.n]
	}
	need := max(1, (es.n+pageSize-1)>>pageBits)
	for len(es.pages) > need+1 {
		es.pages[len(es.pages)-1] = nil
		es.pages = es.pages[:len(es.pages)-1]
	}
}

// compact lets go of the spare page and of the first page's room to grow,
// for a shard that has shrunk.
func (es *entries[K]) compact() {
	if es.n < pageSize && len(es.pages) > 0 {
		es.pages = es.pages[:1:1]
		es.pages[0] = slices.Clone(es.pages[0])
		return
	}
	need := (es.n + pageSize - 1) >> pageBits
	es.pages = slices.Clone(es.pages[:need])
}
