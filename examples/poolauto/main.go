// Command poolauto spreads an http.Client's requests over three API keys
// whose quotas it is not told: a pool.Pool whose members are auto Quotas,
// each learning its key's limit from the RateLimit headers of the answers
// to the calls sent with that key. Against a fake vendor on loopback
// (throttletest) whose keys allow 10, 20 and 40 requests a second, it
// sends 50 requests one after another, then 420 at once.
//
// Each Quota knows its key's limit from the first answer to a call sent
// with that key. What it sends is its share of that limit, which starts
// lower (the key may have other clients) and grows to the whole limit as
// the counts the vendor reports show that nobody else spends the key: the
// keys that served few of the first 50 requests start the burst at a few
// requests a second and end it at their limit, the vendor refusing none,
// or the few a loaded machine reorders (which the Transport retries).
//
//	go run ./examples/poolauto
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/pool"
	"github.com/throttlekit/throttle/throttletest"
)

func main() {
	keys := []struct {
		name string
		rate int64 // requests a second the vendor allows the key
	}{{"sk-a", 10}, {"sk-b", 20}, {"sk-c", 40}}

	// The fake vendor: one throttletest quota per key, told apart by the
	// Authorization header, each answering with IETF RateLimit headers.
	var mu sync.Mutex
	perKey := map[string]int{}
	fakes := map[string]*throttletest.Server{}
	apis := map[string]http.Handler{}
	for _, k := range keys {
		fakes[k.name], apis[k.name] = throttletest.NewHandler(throttletest.Config{
			Requests: throttle.Per(k.rate, time.Second), RequestBurst: k.rate / 2, Dialect: throttletest.IETF,
		})
	}
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Authorization")[len("Bearer "):]
		mu.Lock()
		perKey[key]++
		mu.Unlock()
		apis[key].ServeHTTP(w, r)
	}))
	defer vendor.Close()

	// The pool: one Quota per key, learned from its answers.
	learned, err := auto.New()
	check(err)
	var members []pool.Member
	routes := map[string]func(*http.Request){}
	for _, k := range keys {
		gate, err := learned.Quota(k.name)
		check(err)
		members = append(members, pool.Member{Name: k.name, Gate: gate})
		routes[k.name], err = httpthrottle.RouteTo(vendor.URL, vendor.URL, http.Header{"Authorization": {"Bearer " + k.name}})
		check(err)
	}
	p, err := pool.New(members)
	check(err)
	tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(p), httpthrottle.WithRoutes(routes))
	check(err)
	client := &http.Client{Transport: tr}

	for range 50 {
		send(client, vendor.URL, 1)
	}
	fmt.Println("after 50 requests, one at a time:")
	report(learned)

	mu.Lock()
	clear(perKey)
	mu.Unlock()
	refusedBefore := int64(0)
	for _, f := range fakes {
		refusedBefore += f.Stats().Throttled
	}
	ok, took := send(client, vendor.URL, 420)
	refused := -refusedBefore
	for _, f := range fakes {
		refused += f.Stats().Throttled
	}
	fmt.Printf("\n420 requests at once: %d OK in %v; calls per key: sk-a %d, sk-b %d, sk-c %d; the vendor refused %d\n",
		ok, took.Round(10*time.Millisecond), perKey["sk-a"], perKey["sk-b"], perKey["sk-c"], refused)
	report(learned)
}

// report prints each key's learned limit and the share of it sent now.
func report(learned *auto.Limiter) {
	stats := learned.Stats()
	slices.SortFunc(stats, func(x, y auto.QuotaStats) int { return strings.Compare(x.Key, y.Key) })
	for _, q := range stats {
		l := q.Limits[0]
		if !l.Learned {
			fmt.Printf("  %s: not learned yet\n", q.Key)
			continue
		}
		perSec := float64(l.Rate.Tokens()) / l.Rate.Period().Seconds()
		fmt.Printf("  %s: limit %d requests per %v, sending %.1f a second\n", q.Key, l.Quota, l.Window, perSec)
	}
}

// send makes n concurrent requests and counts the 200s.
func send(client *http.Client, url string, n int) (ok int, took time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			resp, err := client.Get(url + "/v1/items")
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok, time.Since(start)
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
