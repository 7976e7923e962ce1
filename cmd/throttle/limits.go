package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/cmd/throttle/internal/trace"
)

// limitSpec is one --limit of simulate.
type limitSpec struct {
	name       string
	rateText   string // the rate as written
	rate       throttle.Rate
	capacity   int64
	perRequest bool // costs 1 per request, not the trace's cost
}

// perSecond returns the rate in tokens per second, for reports only.
func (l *limitSpec) perSecond() float64 {
	return float64(l.rate.Tokens()) / l.rate.Period().Seconds()
}

// limitsFlag collects repeated --limit flags.
type limitsFlag []limitSpec

func (f *limitsFlag) String() string { return "" }

func (f *limitsFlag) Set(s string) error {
	l, err := parseLimit(s)
	if err != nil {
		return err
	}
	for _, o := range *f {
		if o.name == l.name {
			return fmt.Errorf("limit %q given twice", l.name)
		}
	}
	*f = append(*f, l)
	return nil
}

// parseLimit parses NAME=RATE[,burst=N][,per=request|cost]. The capacity
// defaults to the rate's token count per period, so "500/1m" allows a
// burst of 500. A limit named "requests" counts 1 per request unless per=
// says otherwise; any other limit counts the trace's cost column.
func parseLimit(s string) (limitSpec, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return limitSpec{}, errors.New("want NAME=RATE[,burst=N][,per=request|cost], such as requests=500/1m")
	}
	if strings.ContainsAny(name, " \t,/") {
		return limitSpec{}, fmt.Errorf("limit name %q must not contain spaces, commas or slashes", name)
	}
	parts := strings.Split(rest, ",")
	l := limitSpec{name: name, rateText: parts[0], perRequest: name == "requests"}
	if err := needPeriod(parts[0]); err != nil {
		return l, err
	}
	if err := once(parts[1:]); err != nil {
		return l, err
	}
	r, err := trace.ParseRate(parts[0])
	if err != nil {
		return l, fmt.Errorf("rate %q: %w", parts[0], err)
	}
	if l.rate, err = exactRate(r); err != nil {
		return l, fmt.Errorf("rate %q: %w", parts[0], err)
	}
	burstSet := false
	for _, opt := range parts[1:] {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "burst":
			if l.capacity, err = trace.ParseCost(v); err != nil {
				return l, fmt.Errorf("burst %q: %w", v, err)
			}
			burstSet = true
		case "per":
			switch v {
			case "request":
				l.perRequest = true
			case "cost":
				l.perRequest = false
			default:
				return l, fmt.Errorf("per=%q: want per=request or per=cost", v)
			}
		default:
			return l, fmt.Errorf("unknown option %q: want burst=N or per=request|cost", opt)
		}
	}
	if !burstSet {
		n, err := r.Tokens.Scaled(0)
		if err != nil || n == 0 {
			return l, fmt.Errorf("rate %q has no whole number of tokens per period to use as the burst: add burst=N", parts[0])
		}
		l.capacity = n
	}
	if _, err := throttle.New(l.capacity, l.rate); err != nil {
		return l, err
	}
	return l, nil
}

// needPeriod refuses a rate written without its period: "requests=5" could
// mean 5 a second or 5 a minute, and a quota's period is what a vendor
// documents.
func needPeriod(rate string) error {
	if rate != "" && !strings.Contains(rate, "/") {
		return fmt.Errorf("rate %q has no period: write tokens per period, such as %s/1s or %s/1m", rate, rate, rate)
	}
	return nil
}

// once refuses an option given twice, which would otherwise keep the last.
func once(opts []string) error {
	seen := map[string]string{}
	for _, opt := range opts {
		k, _, _ := strings.Cut(opt, "=")
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("%s given twice (%s and %s): give it once", k, prev, opt)
		}
		seen[k] = opt
	}
	return nil
}

// exactRate converts a written rate to the library's whole tokens per
// period without rounding: a fractional token count stretches the period
// instead, so 0.5/1s is 5 tokens every 10 s.
func exactRate(r trace.Rate) (throttle.Rate, error) {
	if r.Tokens.Exp >= 0 {
		n, err := r.Tokens.Scaled(0)
		if err != nil {
			return throttle.Rate{}, err
		}
		return throttle.Per(n, r.Period), nil
	}
	pow, ok := trace.Pow10(-int(r.Tokens.Exp))
	if !ok || r.Tokens.Coef > math.MaxInt64 || int64(r.Period) > math.MaxInt64/pow {
		return throttle.Rate{}, fmt.Errorf("%w: too many decimal places for an exact period", trace.ErrRange)
	}
	return throttle.Per(int64(r.Tokens.Coef), r.Period*time.Duration(pow)), nil
}
