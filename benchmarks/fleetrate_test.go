package benchmarks

import (
	"context"
	"net/http"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// envFleetClient picks the fleet children's limiter: unset, redisbucket
// under httpthrottle's Transport; "redis_rate", go-redis/redis_rate as its
// README shows a user waiting for a permit (Allow, then sleep RetryAfter
// and ask again), for Redis's cost per decision beside ours.
const envFleetClient = "THROTTLE_FLEET_CLIENT"

// rateTransport sends each request once redis_rate allows it on both
// limits of the fleet's quota, the requests' then the tokens' (the
// request's max_tokens and a prompt's few, as llm.Config estimates).
type rateTransport struct {
	lim  *redis_rate.Limiter
	base *http.Transport
}

// rateTokens is what one fleet call costs on the tokens limit.
const rateTokens = 110

func newRateTransport(rdb *redis.Client) *rateTransport {
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &rateTransport{lim: redis_rate.NewLimiter(rdb), base: base}
}

func (t *rateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	for _, l := range []struct {
		key  string
		n    int
		rate redis_rate.Limit
	}{
		{"fleet38:rr:requests", 1, redis_rate.Limit{Rate: fleetRPM, Burst: fleetBurst, Period: time.Minute}},
		{"fleet38:rr:tokens", rateTokens, redis_rate.Limit{Rate: fleetTPM, Burst: fleetTPM, Period: time.Minute}},
	} {
		if err := t.wait(ctx, l.key, l.rate, l.n); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(r)
}

// wait asks redis_rate for n of key until it allows them, sleeping the
// RetryAfter it returns between asks.
func (t *rateTransport) wait(ctx context.Context, key string, limit redis_rate.Limit, n int) error {
	for {
		res, err := t.lim.AllowN(ctx, key, limit, n)
		if err != nil {
			return err
		}
		if res.Allowed > 0 {
			return nil
		}
		timer := time.NewTimer(res.RetryAfter)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

func (t *rateTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }
