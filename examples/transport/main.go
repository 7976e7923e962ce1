// Command transport keeps an http.Client under a vendor's quota with
// httpthrottle.Transport, against a fake vendor on loopback
// (throttletest) allowing 20 requests a second with bursts of 10.
//
// It sends 60 concurrent requests three times: with a plain client, which
// gets most of them refused; with a Transport that knows the quota, which
// gets none refused; and with a Transport that believes the quota is twice
// what it is, which gets refused, pauses every goroutine on the server's
// Retry-After, retries, and still loses no request.
//
//	go run ./examples/transport
package main

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/throttletest"
)

const requests = 60

func main() {
	vendor := throttletest.NewServer(throttletest.Config{Requests: throttle.Per(20, time.Second), RequestBurst: 10})
	defer vendor.Close()
	fmt.Printf("fake vendor at %s: 20 requests/s per API key, bursts of 10, IETF RateLimit headers\n", vendor.URL)
	fmt.Printf("each client sends %d requests at once; the quota allows them in %v at best\n\n", requests, time.Duration(requests-10)*time.Second/20)

	ok, refused, took := send(http.DefaultTransport, vendor.URL, "sk-plain")
	fmt.Printf("plain client:            %2d OK, %2d 429s returned to the caller, in %v\n", ok, refused, took.Round(time.Millisecond))

	for _, c := range []struct {
		name string
		rate int64
	}{{"throttled client:", 20}, {"over-optimistic client:", 40}} {
		bucket, err := throttle.New(10, throttle.Per(c.rate, time.Second), throttle.WithName("requests"))
		if err != nil {
			panic(err)
		}
		limiter, err := throttle.NewLimiter(bucket)
		if err != nil {
			panic(err)
		}
		tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(limiter))
		if err != nil {
			panic(err)
		}
		ok, refused, took := send(tr, vendor.URL, fmt.Sprintf("sk-%d", c.rate))
		st := tr.Stats()
		fmt.Printf("%-24s %2d OK, %2d 429s returned to the caller, in %v (limiter at %d/s)\n", c.name, ok, refused, took.Round(time.Millisecond), c.rate)
		fmt.Printf("%-24s %d attempts sent; %d answered 429, paused every goroutine and were retried (%d retries), not returned to the caller; requests waited %v in all for permits\n",
			"", st.Sent, st.Throttled, st.Retried, st.Waited.Round(time.Millisecond))
	}
	st := vendor.Stats()
	fmt.Printf("\nthe vendor saw %d requests: %d admitted, %d refused\n", st.Requests, st.Admitted, st.Throttled)
}

// send makes the requests concurrently with the API key key through rt and
// counts what the caller got back: responses, not the attempts the
// transport retried.
func send(rt http.RoundTripper, url, key string) (ok, refused int, took time.Duration) {
	client := &http.Client{Transport: rt}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range requests {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, url+"/v1/items", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := client.Do(req)
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch resp.StatusCode {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
				refused++
			}
		})
	}
	wg.Wait()
	return ok, refused, time.Since(start)
}
