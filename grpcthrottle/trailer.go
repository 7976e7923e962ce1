package grpcthrottle

import (
	"net/http"

	"google.golang.org/grpc/metadata"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// The metadata keys of WriteIETF: the IETF RateLimit-Policy and RateLimit
// fields, lower-cased as gRPC metadata keys are.
const (
	PolicyKey    = "ratelimit-policy"
	RateLimitKey = "ratelimit"
)

// WriteIETF writes status to md as httpthrottle.WriteIETF writes it to an HTTP
// header (draft-ietf-httpapi-ratelimit-headers-10: one policy per limit,
// q and w its rate, r the whole tokens left, t the seconds until it is
// full again), under PolicyKey and RateLimitKey: the quota status a Server
// sends in the trailing metadata of every call its Gate decides. It
// replaces any values already under those keys.
func WriteIETF(md metadata.MD, status []throttle.LimitStatus) {
	h := make(http.Header, 2)
	httpthrottle.WriteIETF(h, status)
	md.Set(PolicyKey, h.Values("Ratelimit-Policy")...)
	md.Set(RateLimitKey, h.Values("Ratelimit")...)
}
