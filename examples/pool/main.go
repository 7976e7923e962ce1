// Command pool spreads an http.Client's requests over three API keys of
// one vendor with a pool.Pool under httpthrottle.Transport, against a
// fake vendor on loopback (throttletest) allowing each key 20 requests a
// second with bursts of 10.
//
// It sends 120 concurrent requests: the pool sends each through the key
// with the most left, so that the three keys drain together and the
// vendor refuses none, or the few a loaded machine reorders (which the
// Transport retries); then one key's quota runs out for the month
// (insufficient_quota), and after that one answer the pool stops using
// it, retrying that request on another key. (Requests already sent to the
// key before its first such answer come back refused too, and are retried
// the same way.)
//
//	go run ./examples/pool
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/pool"
	"github.com/throttlekit/throttle/throttletest"
)

const requests = 120

func main() {
	fake, api := throttletest.NewHandler(throttletest.Config{Requests: throttle.Per(20, time.Second), RequestBurst: 10})
	// In front of the fake vendor: a count of the calls per key, and
	// insufficient_quota for sk-c once exhausted is set.
	var exhausted atomic.Bool
	var mu sync.Mutex
	perKey := map[string]int{}
	refusedC := 0 // insufficient_quota answers sent
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Authorization")
		mu.Lock()
		perKey[key]++
		out := exhausted.Load() && key == "Bearer sk-c"
		if out {
			refusedC++
		}
		mu.Unlock()
		if out {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`)
			return
		}
		api.ServeHTTP(w, r)
	})
	vendor := httptest.NewServer(front)
	defer vendor.Close()

	var members []pool.Member
	routes := map[string]func(*http.Request){}
	for _, key := range []string{"sk-a", "sk-b", "sk-c"} {
		bucket, err := throttle.New(10, throttle.Per(20, time.Second), throttle.WithName("requests"))
		check(err)
		limiter, err := throttle.NewLimiter(bucket)
		check(err)
		members = append(members, pool.Member{Name: key, Gate: limiter})
		// Every key has the vendor's base URL here; a deployment of
		// another region would have its own.
		routes[key], err = httpthrottle.RouteTo(vendor.URL, vendor.URL, http.Header{"Authorization": {"Bearer " + key}})
		check(err)
	}
	p, err := pool.New(members)
	check(err)
	tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(p), httpthrottle.WithRoutes(routes))
	check(err)
	client := &http.Client{Transport: tr}

	ok, took := send(client, vendor.URL, requests)
	fmt.Printf("%d requests over 3 keys of 20/s (bursts of 10): %d OK in %v\n", requests, ok, took.Round(10*time.Millisecond))
	fmt.Printf("calls per key: sk-a %d, sk-b %d, sk-c %d; the vendor refused %d\n\n",
		perKey["Bearer sk-a"], perKey["Bearer sk-b"], perKey["Bearer sk-c"], fake.Stats().Throttled)

	exhausted.Store(true)
	clear(perKey)
	ok = 0
	for range 3 {
		// One at a time, then a burst: the first request finds sk-c out
		// of quota; no request after it goes there.
		n, _ := send(client, vendor.URL, 1)
		ok += n
	}
	n, _ := send(client, vendor.URL, 30)
	ok += n
	fmt.Printf("sk-c out of quota: 33 requests, %d OK; calls per key: sk-a %d, sk-b %d, sk-c %d (%d insufficient_quota)\n",
		ok, perKey["Bearer sk-a"], perKey["Bearer sk-b"], perKey["Bearer sk-c"], refusedC)
	fmt.Printf("sk-c quarantined until %s\n", p.Quarantined("sk-c").Format(time.TimeOnly))
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
