package benchmarks

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// answerHook answers every command on the client itself, with what the
// server would have replied to the decision scripts when every request
// passes, so that a benchmark times the library and go-redis's command
// handling without the socket, the scheduler's wake-ups or the server.
type answerHook struct{}

func (answerHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (answerHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (answerHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		now := time.Now().UnixMicro()
		switch c := cmd.(type) {
		case *redis.IntSliceCmd:
			if slices.Contains(cmd.Args(), any("p")) { // redisbucket's check at New: a peek, the general reply
				c.SetVal([]int64{1, 0, 0, now, 0, 1, 0, decisionRate, 0}) // status, wait, amount, now, flags, live, paused; tok, rem
				return nil
			}
			c.SetVal([]int64{1, 0, now, decisionRate - 1}) // redisbucket's fast path: status, wait, now, tokens
		case *redis.Cmd: // redis_rate: allowed, remaining, retry_after, reset_after
			c.SetVal([]any{int64(1), int64(decisionRate - 1), "-1", "1e-06"})
		default:
			return fmt.Errorf("answerHook: unexpected %T %v", cmd, cmd.Args())
		}
		return nil
	}
}

// BenchmarkRedisClientOverhead is BenchmarkRedisDecision's loop on a
// client whose commands are answered by a hook (answerHook): what each
// library costs the calling process per decision on top of a round trip
// both pay alike. Same client options as redisClient; no server is needed.
func BenchmarkRedisClientOverhead(b *testing.B) {
	for _, impl := range []string{"throttle", "redis_rate"} {
		b.Run(impl, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DisableIdentity: true, PoolSize: 16, ContextTimeoutEnabled: true,
				DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
				Dialer: func(context.Context, string, string) (net.Conn, error) {
					return nil, fmt.Errorf("answerHook: no dialing")
				}})
			c.AddHook(answerHook{})
			defer c.Close()
			ctx := context.Background()
			var decide func() (bool, error)
			switch impl {
			case "throttle":
				bk, err := redisbucket.New(c, "bench", decisionRate, throttle.Per(decisionRate, time.Second),
					redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithCallTimeout(time.Second),
					// TryAcquire never waits; and the answering hook has no
					// connection for the pause feed that reservations open.
					redisbucket.WithoutReservations())
				if err != nil {
					b.Fatal(err)
				}
				decide = func() (bool, error) { return bk.TryAcquire(1) }
			case "redis_rate":
				lim := redis_rate.NewLimiter(c)
				limit := redis_rate.Limit{Rate: decisionRate, Burst: decisionRate, Period: time.Second}
				decide = func() (bool, error) {
					res, err := lim.Allow(ctx, "bench", limit)
					if err != nil {
						return false, err
					}
					return res.Allowed > 0, nil
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if ok, err := decide(); err != nil || !ok {
					b.Fatalf("decision: %v %v", ok, err)
				}
			}
		})
	}
}
