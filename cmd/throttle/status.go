package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/throttlekit/throttle/statuspage"
)

// demoLimiter is the name the demo's throttled client has on the page.
const demoLimiter = "throttled client"

// statusPath is where the page is mounted, as net/http/pprof's is.
const statusPath = "/debug/throttle/"

// serveStatus serves a status page on addr until stop, and says where.
func serveStatus(e *env, addr string) (page *statuspage.Page, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, usagef("--status %q: %v", addr, err)
	}
	page, err = statuspage.New()
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(statusPath, page)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(e.stdout, "status page at http://%s%s\n", ln.Addr(), statusPath)
	return page, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(e.stderr, "throttle: status page: %v\n", err)
		}
		page.Close()
	}, nil
}
