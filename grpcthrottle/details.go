package grpcthrottle

import (
	"fmt"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/throttlekit/throttle"
)

// PushbackKey is the trailing metadata of gRPC's retry design (gRFC A6)
// by which a server tells a client's retry policy how long to wait, in
// milliseconds, before its next attempt; a negative value asks it not to
// retry. grpc-go's retryPolicy honours it in place of its own back-off.
const PushbackKey = "grpc-retry-pushback-ms"

// PreviousAttemptsKey is the metadata grpc-go's retry policy sends with
// every attempt after the first: how many attempts came before it. A
// server can read it to see which calls are retries.
const PreviousAttemptsKey = "grpc-previous-rpc-attempts"

// Refusal is what a status of codes.ResourceExhausted or
// codes.Unavailable says about a quota, read by Refused.
type Refusal struct {
	Code codes.Code
	// RetryDelay is the google.rpc.RetryInfo's retry_delay, never
	// negative, or -1 if the status carries none.
	RetryDelay time.Duration
	// Violations are the google.rpc.QuotaFailure's violations, if any.
	Violations []*errdetails.QuotaFailure_Violation
}

// Refused reads err as a server's refusal: ok is true for a status of
// codes.ResourceExhausted, or of codes.Unavailable with a RetryInfo (an
// Unavailable without one is the transport's failure, not a quota's, and
// is grpc-go's retry policy's to handle). An invalid retry_delay counts as
// none; a negative one as 0.
func Refused(err error) (r Refusal, ok bool) {
	s, isStatus := status.FromError(err)
	if !isStatus || (s.Code() != codes.ResourceExhausted && s.Code() != codes.Unavailable) {
		return Refusal{}, false
	}
	r = Refusal{Code: s.Code(), RetryDelay: -1}
	for _, d := range s.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			if d.GetRetryDelay().CheckValid() == nil {
				r.RetryDelay = max(d.GetRetryDelay().AsDuration(), 0)
			}
		case *errdetails.QuotaFailure:
			r.Violations = append(r.Violations, d.GetViolations()...)
		}
	}
	if r.Code == codes.Unavailable && r.RetryDelay < 0 {
		return Refusal{}, false
	}
	return r, true
}

// names reports whether v names the limit called name: by its quota_id,
// its quota_metric or its subject.
func names(v *errdetails.QuotaFailure_Violation, name string) bool {
	return name != "" && (v.GetQuotaId() == name || v.GetQuotaMetric() == name || v.GetSubject() == name)
}

// refusal returns the status with which a server refuses a call of method
// whose costs g does not cover now, wait being how long until it would
// (from WaitTime), or -1 if never: codes.ResourceExhausted with a
// RetryInfo of exactly wait, when there is one, and a QuotaFailure naming
// each limit that is short (each limit the call costs something on, when
// the Gate is no Meter). status is the Gate's state, if it is a Meter.
func refusal(method string, g throttle.Gate, costs []int64, wait time.Duration, st []throttle.LimitStatus) *status.Status {
	var msg string
	if wait < 0 {
		msg = fmt.Sprintf("grpcthrottle: %s: the call's cost exceeds the quota: it can never be admitted", method)
	} else {
		msg = fmt.Sprintf("grpcthrottle: %s: over quota, retry in %v", method, wait)
	}
	s := status.New(codes.ResourceExhausted, msg)
	qf := &errdetails.QuotaFailure{}
	limits := g.Limits()
	for i, l := range limits {
		if i >= len(costs) || costs[i] <= 0 {
			continue
		}
		if i < len(st) && st[i].Remaining >= costs[i] && wait >= 0 {
			continue // this limit covers its cost; another is short
		}
		desc := fmt.Sprintf("%d asked", costs[i])
		if i < len(st) {
			desc += fmt.Sprintf(", %d left of %d", st[i].Remaining, st[i].Capacity)
		}
		qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{
			Subject:     method,
			QuotaId:     l.Name,
			Description: desc,
		})
	}
	details := []protoadapt.MessageV1{qf}
	if wait >= 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(wait)})
	}
	if ds, err := s.WithDetails(details...); err == nil {
		s = ds
	}
	return s
}

// pushback is the PushbackKey value for wait: whole milliseconds, rounded
// up so that a retry after it is admitted, or -1 (do not retry) if never.
func pushback(wait time.Duration) string {
	if wait < 0 {
		return "-1"
	}
	ms := wait / time.Millisecond
	if wait%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(int64(ms), 10)
}
