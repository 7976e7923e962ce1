package grpcthrottle_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/throttlekit/throttle/grpcthrottle"
)

// Refused reads what servers send: Google's "10.689924287s" delays, none,
// invalid or negative ones, and codes that are no refusal.
func TestRefused(t *testing.T) {
	withDelay := func(code codes.Code, d *durationpb.Duration) error {
		s, err := status.New(code, "quota").WithDetails(&errdetails.RetryInfo{RetryDelay: d})
		if err != nil {
			t.Fatal(err)
		}
		return s.Err()
	}
	for _, tc := range []struct {
		name  string
		err   error
		ok    bool
		delay time.Duration
	}{
		{"Google's fractional delay", withDelay(codes.ResourceExhausted, &durationpb.Duration{Seconds: 10, Nanos: 689924287}), true, 10*time.Second + 689924287},
		{"no RetryInfo", status.Error(codes.ResourceExhausted, "quota"), true, -1},
		{"negative delay", withDelay(codes.ResourceExhausted, &durationpb.Duration{Seconds: -5}), true, 0},
		{"invalid delay (nanos out of range)", withDelay(codes.ResourceExhausted, &durationpb.Duration{Seconds: 1, Nanos: 2e9}), true, -1},
		{"huge delay saturates", withDelay(codes.ResourceExhausted, &durationpb.Duration{Seconds: 315576000000}), true, time.Duration(1<<63 - 1)},
		{"Unavailable with RetryInfo", withDelay(codes.Unavailable, durationpb.New(time.Second)), true, time.Second},
		{"Unavailable without", status.Error(codes.Unavailable, "down"), false, 0},
		{"another code", withDelay(codes.PermissionDenied, durationpb.New(time.Second)), false, 0},
		{"not a status", errors.New("boom"), false, 0},
		{"nil", nil, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := grpcthrottle.Refused(tc.err)
			if ok != tc.ok || (ok && r.RetryDelay != tc.delay) {
				t.Errorf("Refused = %+v, %v; want ok %v, delay %v", r, ok, tc.ok, tc.delay)
			}
		})
	}
}

// FuzzRefused feeds Refused whole google.rpc.Status messages, as the
// grpc-status-details-bin trailer brings them: it never panics, a delay
// is -1 or not negative, and only the two codes are refusals.
func FuzzRefused(f *testing.F) {
	ri, _ := anypb.New(&errdetails.RetryInfo{RetryDelay: &durationpb.Duration{Seconds: 10, Nanos: 689924287}})
	qf, _ := anypb.New(&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{Subject: "project:1", QuotaId: "requests"}}})
	for _, s := range []*spb.Status{
		{Code: int32(codes.ResourceExhausted), Message: "quota", Details: []*anypb.Any{ri, qf}},
		{Code: int32(codes.Unavailable), Details: []*anypb.Any{ri}},
		{Code: int32(codes.ResourceExhausted), Details: []*anypb.Any{{TypeUrl: "type.googleapis.com/google.rpc.RetryInfo", Value: []byte{0x0a, 0x02, 0x08}}}},
	} {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s spb.Status
		if proto.Unmarshal(b, &s) != nil {
			return
		}
		err := status.FromProto(&s).Err()
		r, ok := grpcthrottle.Refused(err)
		if !ok {
			return
		}
		if r.Code != codes.ResourceExhausted && r.Code != codes.Unavailable {
			t.Fatalf("code %v taken for a refusal", r.Code)
		}
		if r.RetryDelay < -1 {
			t.Fatalf("delay %v", r.RetryDelay)
		}
		if r.Code == codes.Unavailable && r.RetryDelay < 0 {
			t.Fatal("an Unavailable without RetryInfo taken for a refusal")
		}
	})
}
