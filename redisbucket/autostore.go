package redisbucket

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// AutoStore keeps what the Limiters of package httpthrottle/auto learn
// about each quota in Redis, so that the processes of a fleet learn it
// together (auto.Fleet; AutoStore is an auto.Store):
//
//	learned, err := auto.New(auto.Fleet(redisbucket.NewAutoStore(rdb, "")))
//	if err != nil {
//		return err
//	}
//
// Each quota is two keys that share a hash tag, so a cluster keeps them on
// one node and spreads quotas over nodes: a hash of the state and its
// version ("{KEY}:s"), written only by a compare-and-set on the version,
// and a sorted set of the members by the Redis server's time of their
// last sync ("{KEY}:m"). Both expire when nobody syncs. Each call is one
// round trip (a script); the auto.Limiter calls it with a short deadline, which
// reaches the socket only with the client's ContextTimeoutEnabled.
type AutoStore struct {
	client redis.UniversalClient
	prefix string
}

// NewAutoStore returns an AutoStore on client whose keys start with
// prefix (which may be empty).
func NewAutoStore(client redis.UniversalClient, prefix string) *AutoStore {
	return &AutoStore{client: client, prefix: prefix}
}

func (s *AutoStore) keys(key string) (state, members string) {
	k := s.prefix + "{" + key + "}"
	return k + ":s", k + ":m"
}

// loadScript records ARGV[1] as a member of KEYS[2] now, by the server's
// clock, forgets members older than ARGV[2] ms, and returns the count of
// the rest with the version and state in KEYS[1].
var loadScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[2], ttl * 2)
local n = redis.call('ZCARD', KEYS[2])
local vs = redis.call('HMGET', KEYS[1], 'v', 's')
return {n, vs[1] or '0', vs[2] or ''}
`)

// Load records member as using key now, by the Redis server's clock, and
// returns the members seen within memberTTL, with the state of key and its
// version (0 and nil when none), in one round trip.
func (s *AutoStore) Load(ctx context.Context, key, member string, memberTTL time.Duration) ([]byte, int64, int, error) {
	state, members := s.keys(key)
	res, err := loadScript.Run(ctx, s.client, []string{state, members}, member, ttlMillis(memberTTL)).Slice()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("redisbucket: loading the learned state of %q: %w", key, err)
	}
	if len(res) != 3 {
		return nil, 0, 0, fmt.Errorf("redisbucket: loading the learned state of %q: %d values in the reply, want 3", key, len(res))
	}
	n, _ := res[0].(int64)
	if n < 1 {
		return nil, 0, 0, errors.New("redisbucket: the fleet of " + strconv.Quote(key) + " counts no member after a join")
	}
	vs, _ := res[1].(string)
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("redisbucket: the learned state of %q has version %q", key, vs)
	}
	var data []byte
	if d, _ := res[2].(string); v > 0 {
		data = []byte(d)
	}
	return data, v, int(n), nil
}

// storeScript replaces the state if its version is still ARGV[1].
var storeScript = redis.NewScript(`
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
	return 0
end
redis.call('HSET', KEYS[1], 'v', v + 1, 's', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// Store replaces the state of key if its version is still version.
func (s *AutoStore) Store(ctx context.Context, key string, version int64, state []byte, ttl time.Duration) (bool, error) {
	k, _ := s.keys(key)
	n, err := storeScript.Run(ctx, s.client, []string{k}, version, state, ttlMillis(ttl)).Int64()
	if err != nil {
		return false, fmt.Errorf("redisbucket: storing the learned state of %q: %w", key, err)
	}
	return n == 1, nil
}

// ttlMillis is d in whole milliseconds, at least 1.
func ttlMillis(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}
