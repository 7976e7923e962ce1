package redisbucket

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle/budget"
)

// BudgetStore keeps budgets' spend in Redis, a budget.Store shared by a
// fleet and kept across its restarts: each key a hash, <prefix><key>,
// of its window's start (w, Unix nanoseconds, 20 digits) and its spend
// (s), changed by one script call per reservation or settlement. Spends
// are exact up to 2^53, Lua's integers.
type BudgetStore struct {
	c      redis.UniversalClient
	prefix string
}

var _ budget.Store = (*BudgetStore)(nil)

// NewBudgetStore returns the BudgetStore of c whose keys start with
// prefix ("budget:" if empty). Entries scans one node: on a Redis
// Cluster it lists the keys of the node c's Scan reaches.
func NewBudgetStore(c redis.UniversalClient, prefix string) *BudgetStore {
	if prefix == "" {
		prefix = "budget:"
	}
	return &BudgetStore{c: c, prefix: prefix}
}

// budgetWindow brings the key to the window ARGV[1]: a later one starts
// afresh, an earlier one (a closed account) returns nil. The window is a
// 20-digit string, so comparing strings compares instants exactly.
const budgetWindow = `
local w = ARGV[1]
local cur = redis.call('HGET', KEYS[1], 'w')
if cur == false or cur < w then
	redis.call('HSET', KEYS[1], 'w', w, 's', 0)
	return 0
elseif cur > w then
	return nil
end
return tonumber(redis.call('HGET', KEYS[1], 's'))
`

var budgetReserve = redis.NewScript(`local function window()` + budgetWindow + `end
local s = window()
if s == nil then return {0, 0} end
local cost, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
if cost > limit - s then return {s, 0} end
return {redis.call('HINCRBY', KEYS[1], 's', cost), 1}
`)

var budgetAdjust = redis.NewScript(`local function window()` + budgetWindow + `end
if window() == nil then return 0 end
local s = redis.call('HINCRBY', KEYS[1], 's', ARGV[2])
if s < 0 then
	redis.call('HSET', KEYS[1], 's', 0)
	s = 0
end
return s
`)

func windowArg(w time.Time) string { return fmt.Sprintf("%020d", w.UnixNano()) }

// Reserve implements budget.Store.
func (s *BudgetStore) Reserve(ctx context.Context, key string, w time.Time, cost, limit int64) (int64, bool, error) {
	v, err := budgetReserve.Run(ctx, s.c, []string{s.prefix + key}, windowArg(w), cost, limit).Int64Slice()
	if err != nil {
		return 0, false, fmt.Errorf("redisbucket: budget %q: %w", key, err)
	}
	return v[0], v[1] == 1, nil
}

// Adjust implements budget.Store.
func (s *BudgetStore) Adjust(ctx context.Context, key string, w time.Time, delta int64) (int64, error) {
	v, err := budgetAdjust.Run(ctx, s.c, []string{s.prefix + key}, windowArg(w), delta).Int64()
	if err != nil {
		return 0, fmt.Errorf("redisbucket: budget %q: %w", key, err)
	}
	return v, nil
}

// Spent implements budget.Store.
func (s *BudgetStore) Spent(ctx context.Context, key string, w time.Time) (int64, error) {
	e, err := s.entry(ctx, s.prefix+key)
	if err != nil || !e.Window.Equal(w) {
		return 0, err
	}
	return e.Spent, nil
}

// entry reads one key's hash.
func (s *BudgetStore) entry(ctx context.Context, rkey string) (budget.Entry, error) {
	v, err := s.c.HMGet(ctx, rkey, "w", "s").Result()
	if err != nil {
		return budget.Entry{}, fmt.Errorf("redisbucket: budget %q: %w", strings.TrimPrefix(rkey, s.prefix), err)
	}
	e := budget.Entry{Key: strings.TrimPrefix(rkey, s.prefix)}
	if w, ok := v[0].(string); ok {
		ns, _ := strconv.ParseInt(w, 10, 64)
		e.Window = time.Unix(0, ns)
	}
	if sp, ok := v[1].(string); ok {
		e.Spent, _ = strconv.ParseInt(sp, 10, 64)
	}
	return e, nil
}

// Entries implements budget.Store.
func (s *BudgetStore) Entries(ctx context.Context) ([]budget.Entry, error) {
	var out []budget.Entry
	it := s.c.Scan(ctx, 0, s.prefix+"*", 100).Iterator()
	for it.Next(ctx) {
		e, err := s.entry(ctx, it.Val())
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("redisbucket: listing budgets: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Reset implements budget.Store.
func (s *BudgetStore) Reset(ctx context.Context, key string) error {
	if err := s.c.Del(ctx, s.prefix+key).Err(); err != nil {
		return fmt.Errorf("redisbucket: budget %q: %w", key, err)
	}
	return nil
}
