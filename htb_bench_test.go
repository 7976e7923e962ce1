package throttle

import (
	"testing"
	"time"
)

// BenchmarkClassAcquireFree is Class.Acquire when the tokens are there, at
// depth 2: it must not allocate.
func BenchmarkClassAcquireFree(b *testing.B) {
	root, _ := NewQuota(1<<62, Per(1_000_000_000, time.Second))
	team, _ := root.NewClass(ClassConfig{Rate: Per(500_000_000, time.Second)})
	c, _ := team.NewClass(ClassConfig{Rate: Per(250_000_000, time.Second)})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Acquire(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func TestClassFastPathsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	root, _ := NewQuota(1<<62, Per(1_000_000_000, time.Second))
	team, _ := root.NewClass(ClassConfig{Rate: Per(500_000_000, time.Second)})
	c, _ := team.NewClass(ClassConfig{Rate: Per(250_000_000, time.Second)})
	ctx := t.Context()
	if n := testing.AllocsPerRun(100, func() { c.TryAcquire(1) }); n != 0 {
		t.Errorf("TryAcquire: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { c.Acquire(ctx, 1) }); n != 0 {
		t.Errorf("Acquire: %v allocs", n)
	}
}
