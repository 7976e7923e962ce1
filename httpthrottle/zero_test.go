package httpthrottle_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
)

// TestZeroValuesHTTP: the HTTP layer's nil arguments fail loudly where
// they are given, never with a nil dereference on first use, and never
// by lifting every limit: an invalid limit whose constructor's error was
// ignored is a nil Gate.
func TestZeroValuesHTTP(t *testing.T) {
	var nilLimiter *throttle.Limiter
	for name, pick := range map[string]httpthrottle.Picker{
		"a nil pick":               nil,
		"Shared(nil)":              httpthrottle.Shared(nil),
		"Shared of a nil *Limiter": httpthrottle.Shared(nilLimiter),
	} {
		t.Run("NewTransport/"+name, func(t *testing.T) {
			tr, err := httpthrottle.NewTransport(nil, pick)
			if err == nil || tr != nil || !strings.Contains(err.Error(), "throttle.Inf") {
				t.Errorf("NewTransport: %v, %v; want an error that says how to spell no limit", tr, err)
			}
		})
		t.Run("Handler/"+name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("Handler(ok, %s) did not panic", name)
				}
			}()
			httpthrottle.Handler(http.NotFoundHandler(), pick)
		})
	}
	t.Run("Handler(nil, …)", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || r.(string) != "throttle: Handler: nil next handler" {
				t.Errorf("Handler(nil, …) recovered %v, want a panic that names the nil handler", r)
			}
		}()
		httpthrottle.Handler(nil, nil)
	})
	t.Run("nil options", func(t *testing.T) {
		lim := must(throttle.NewLimiter(must(throttle.New(1, throttle.Inf))))
		if _, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(lim), nil); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("NewTransport with a nil option: %v, want ErrInvalidOption", err)
		}
		if _, err := auto.New(nil); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("auto.New with a nil option: %v, want ErrInvalidOption", err)
		}
		defer func() {
			if err, _ := recover().(error); !errors.Is(err, throttle.ErrInvalidOption) {
				t.Errorf("Handler with a nil option recovered %v, want ErrInvalidOption", err)
			}
		}()
		httpthrottle.Handler(http.NotFoundHandler(), httpthrottle.Shared(lim), nil)
	})
}
