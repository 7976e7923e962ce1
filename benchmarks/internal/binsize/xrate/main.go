// Command xrate is bucket's program on golang.org/x/time/rate, for
// TestBinarySize.
package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

func main() {
	l := rate.NewLimiter(rate.Every(100*time.Millisecond), 3)
	for i := range 3 {
		if err := l.Wait(context.Background()); err != nil {
			panic(err)
		}
		fmt.Println("call", i)
	}
}
