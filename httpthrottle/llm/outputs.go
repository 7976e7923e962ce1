package llm

import (
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// The window Outputs learns from: the last outputWindow outputs reported
// for a model, of which outputPercentile is reserved once there are
// outputSamples; at most outputModels models are learned.
const (
	outputWindow     = 256
	outputSamples    = 32
	outputPercentile = 0.95
	outputModels     = 1024
)

// Outputs learns, model by model, the output tokens calls really use, so
// that a call reserves what calls of its model use rather than its
// max_tokens (often 4096 for a few hundred used): long calls in flight
// then hold no more of a token bucket than they will spend, and the rest
// of the quota serves other calls. Set it in Config.Outputs; one Outputs
// is shared by the copies of the Config holding it, and is safe for
// concurrent use.
//
// The output reserved for a call is the 95th percentile of the outputs
// the last 256 responses of its model reported (its "model", or for
// Gemini the model of the URL), once 32 have; until then, and never above
// it, the call's max_tokens (or Config.DefaultMaxTokens). Only an output
// a response reports is learned, not one counted from a stream's text or
// one cut short by the caller's Close. A call still settles to the usage
// it reports: one that writes more than was reserved takes the
// difference from its buckets then. At most 1024 models are learned;
// calls of others reserve their max_tokens.
type Outputs struct {
	mu     sync.Mutex
	models map[string]*outputRing
}

// outputRing is a model's last outputs, in a ring.
type outputRing struct {
	used [outputWindow]int64
	n    int // outputs recorded, up to outputWindow
	next int // where the next one goes
	// reserve is the percentile of used, -1 when it must be computed
	// again.
	reserve int64
}

// NewOutputs returns an Outputs that has learned nothing yet.
func NewOutputs() *Outputs {
	return &Outputs{models: make(map[string]*outputRing)}
}

// record learns that a call of model reported used output tokens.
func (o *Outputs) record(model string, used int64) {
	if o == nil || used < 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.models[model]
	if r == nil {
		if len(o.models) >= outputModels {
			return
		}
		r = new(outputRing)
		o.models[model] = r
	}
	r.used[r.next] = used
	r.next = (r.next + 1) % outputWindow
	r.n = min(r.n+1, outputWindow)
	r.reserve = -1
}

// reserved returns the output to reserve for a call of model, and ok
// false while too few of its outputs are known.
func (o *Outputs) reserved(model string) (n int64, ok bool) {
	if o == nil {
		return 0, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.models[model]
	if r == nil || r.n < outputSamples {
		return 0, false
	}
	if r.reserve < 0 {
		var sorted [outputWindow]int64
		s := sorted[:r.n]
		copy(s, r.used[:r.n])
		slices.Sort(s)
		// The smallest output at least outputPercentile of them do not
		// exceed.
		i := int(math.Ceil(float64(r.n)*outputPercentile)) - 1
		r.reserve = s[max(i, 0)]
	}
	return r.reserve, true
}

// modelOf returns the model r calls: its body's "model", else the model
// of a Gemini URL (/v1beta/models/gemini-x:generateContent).
func modelOf(r *http.Request) string {
	if m := ModelKey(r); m != "" {
		return m
	}
	return pathModel(r.URL.Path)
}

// pathModel returns the model a URL path names after "/models/", up to
// the method, or "".
func pathModel(path string) string {
	_, m, ok := strings.Cut(path, "/models/")
	if !ok {
		return ""
	}
	m, _, _ = strings.Cut(m, ":")
	m, _, _ = strings.Cut(m, "/")
	return m
}
