// Command bucket is a program that uses only a throttle.Bucket, for
// TestBinarySize: its binary against xrate's, the same program on
// golang.org/x/time/rate.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

func main() {
	b, err := throttle.New(3, throttle.Per(1, 100*time.Millisecond))
	if err != nil {
		panic(err)
	}
	for i := range 3 {
		if err := b.Acquire(context.Background(), 1); err != nil {
			panic(err)
		}
		fmt.Println("call", i)
	}
}
