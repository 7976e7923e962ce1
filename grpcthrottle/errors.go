package grpcthrottle

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/throttlekit/throttle"
)

// GateError is the error of a call that a client's Gate failed before it
// was sent, or of a stream message whose wait failed: it wraps the Gate's
// error (a *throttle.WaitError for a deadline too near, matching
// context.DeadlineExceeded; context.Canceled; throttle.ErrInvalidCost...)
// for errors.Is and errors.As, and carries a gRPC status for status.Code:
// codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted for a
// cost no wait can cover (throttle.ErrCostExceedsCapacity: above a
// capacity, a closed limit, no refill), codes.Internal otherwise.
type GateError struct {
	Method string
	Err    error
}

func (e *GateError) Error() string {
	return "grpcthrottle: " + e.Method + ": waiting for the quota: " + e.Err.Error()
}

func (e *GateError) Unwrap() error { return e.Err }

// GRPCStatus is the status of e, for status.FromError and status.Code.
func (e *GateError) GRPCStatus() *status.Status {
	return status.New(gateCode(e.Err), e.Error())
}

func gateCode(err error) codes.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, throttle.ErrCostExceedsCapacity), errors.Is(err, throttle.ErrCostExceedsCapacity), errors.Is(err, throttle.ErrCostExceedsCapacity):
		return codes.ResourceExhausted
	}
	return codes.Internal
}
