package auto_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
)

func ExampleNew() {
	// A server that publishes its quota in the IETF fields.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"default";q=100;w=60`)
		w.Header().Set("RateLimit", `"default";r=99;t=1`)
	}))
	defer srv.Close()

	learned, err := auto.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := httpthrottle.NewTransport(http.DefaultTransport, learned)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: tr}
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	for _, q := range learned.Stats() {
		for _, l := range q.Limits {
			fmt.Printf("%s: %d per %v, learned %v\n", l.Name, l.Quota, l.Window, l.Learned)
		}
	}
	// Output:
	// requests: 100 per 1m0s, learned true
}
