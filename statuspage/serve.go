package statuspage

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throttlekit/throttle"
)

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

// maxShown bounds the limiters one answer lists, whatever n asks.
const maxShown = 1000

// ServeHTTP answers with the page, or with its data as JSON when the
// query has format=json. The query's q keeps the limiters whose name holds
// it (any case), n how many of the most active to list (at most 1000).
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("format") != "json" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		pageTemplate.Execute(w, struct{ RefreshMs int64 }{p.refresh.Milliseconds()})
		return
	}
	n := p.top
	if v, err := strconv.Atoi(q.Get("n")); err == nil && v > 0 {
		n = min(v, maxShown)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(p.view(q.Get("q"), n))
}

// view is the page's data.
type view struct {
	At        time.Time     `json:"at"`
	EveryMs   int64         `json:"everyMs"`
	RefreshMs int64         `json:"refreshMs"`
	Total     int           `json:"total"`   // limiters registered
	Matched   int           `json:"matched"` // of them, those q matches
	Query     string        `json:"q"`
	Limiters  []limiterView `json:"limiters"`
}

type limiterView struct {
	Name     string      `json:"name"`
	Activity float64     `json:"activity"`
	Limits   []limitView `json:"limits"`
	Auto     []autoView  `json:"auto,omitempty"`
	Events   []record    `json:"events"`
}

type limitView struct {
	throttle.LimitStatus
	Rate      string    `json:"rate"`
	PerSecond float64   `json:"perSecond"`
	ResetNs   int64     `json:"resetNs"`
	OldestNs  int64     `json:"oldestNs"`
	PausedNs  int64     `json:"pausedNs"` // until the pause ends; 0 if none
	Level     []float32 `json:"levelHistory"`
	Spent     []float32 `json:"spentHistory"`
	Estimated bool      `json:"spentEstimated"`
}

type autoView struct {
	Key       string          `json:"key"`
	Throttled int64           `json:"throttled"`
	Limits    []autoLimitView `json:"limits"`
}

type autoLimitView struct {
	Name      string  `json:"name"`
	Policy    string  `json:"policy"`
	Learned   bool    `json:"learned"`
	Quota     int64   `json:"quota"`
	WindowNs  int64   `json:"windowNs"`
	Rate      string  `json:"rate"`
	PerSecond float64 `json:"perSecond"`
	Capacity  int64   `json:"capacity"`
}

// view makes the data of the n most active limiters whose names hold q.
func (p *Page) view(q string, n int) view {
	all := p.snapshot(nil)
	v := view{At: p.clock.Now(), EveryMs: p.every.Milliseconds(), RefreshMs: p.refresh.Milliseconds(), Total: len(all), Query: q}
	type ranked struct {
		e        *entry
		activity float64
	}
	var rs []ranked
	lq := strings.ToLower(q)
	for _, e := range all {
		if q != "" && !strings.Contains(strings.ToLower(e.name), lq) {
			continue
		}
		e.mu.Lock()
		rs = append(rs, ranked{e, e.activity})
		e.mu.Unlock()
	}
	v.Matched = len(rs)
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.activity != b.activity {
			if a.activity > b.activity {
				return -1
			}
			return 1
		}
		return strings.Compare(a.e.name, b.e.name)
	})
	for _, r := range rs[:min(n, len(rs))] {
		v.Limiters = append(v.Limiters, r.e.view(v.At))
	}
	return v
}

// view is the entry's data at now: its limits' Status read once, with
// their history.
func (e *entry) view(now time.Time) limiterView {
	e.mu.Lock()
	m, a := e.meter, e.auto
	e.mu.Unlock()
	var sts []throttle.LimitStatus
	if m != nil {
		sts = m.Status(nil)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	lv := limiterView{Name: e.name, Activity: e.activity, Events: e.events.list()}
	for i, l := range e.limits {
		st := throttle.LimitStatus{Name: l.Name, Capacity: l.Capacity, Rate: l.Rate, Reset: -1}
		if i < len(sts) {
			st = sts[i]
		}
		v := limitView{LimitStatus: st, Rate: st.Rate.String(), PerSecond: perSecond(st.Rate), ResetNs: int64(st.Reset), OldestNs: int64(st.Oldest), Estimated: !e.observed.Load()}
		if !st.Paused.IsZero() {
			v.PausedNs = int64(max(st.Paused.Sub(now), 0))
		}
		if i < len(e.hist) {
			v.Level, v.Spent = e.hist[i].series()
		}
		lv.Limits = append(lv.Limits, v)
	}
	if a != nil {
		for _, s := range a.Stats() {
			av := autoView{Key: s.Key, Throttled: s.Throttled}
			for _, l := range s.Limits {
				av.Limits = append(av.Limits, autoLimitView{Name: l.Name, Policy: l.Policy, Learned: l.Learned, Quota: l.Quota, WindowNs: int64(l.Window),
					Rate: l.Rate.String(), PerSecond: perSecond(l.Rate), Capacity: l.Capacity})
			}
			lv.Auto = append(lv.Auto, av)
		}
	}
	return lv
}

// perSecond is r in tokens a second, 0 for no refill.
func perSecond(r throttle.Rate) float64 {
	if r.Period() <= 0 {
		return 0
	}
	return float64(r.Tokens()) * float64(time.Second) / float64(r.Period())
}
