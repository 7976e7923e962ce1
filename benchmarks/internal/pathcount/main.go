// Command pathcount writes to the directory named by its argument the
// coverage counters of one plain 200 through a Transport over an
// in-process Limiter, after a warm-up, for TestPlainPathFiles: the files
// whose statements ran are the files the call entered.
package main

import (
	"io"
	"net/http"
	"os"
	"runtime/coverage"
	"strings"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

type okBase struct{}

func (okBase) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	b, err := throttle.New(100, throttle.Per(1000, 1e9))
	check(err)
	l, err := throttle.NewLimiter(b)
	check(err)
	tr, err := httpthrottle.NewTransport(okBase{}, httpthrottle.Shared(l))
	check(err)
	req, _ := http.NewRequest("GET", "http://x/", nil)
	do := func() {
		resp, err := tr.RoundTrip(req)
		check(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for i := 0; i < 3; i++ {
		do()
	}
	check(coverage.ClearCounters())
	do()
	check(coverage.WriteMetaDir(os.Args[1]))
	check(coverage.WriteCountersDir(os.Args[1]))
}
