package redisbucket

import "time"

// WithServerTime makes the script use f instead of the server's TIME, so
// exact traces can run against a real server.
func WithServerTime(f func() time.Time) Option { return func(o *options) { o.serverTime = f } }

// ScriptSource exposes the script for SCRIPT LOAD checks.
const ScriptSource = scriptSrc

// Queued returns how many Acquire callers wait in line behind the head.
func Queued(b *Bucket) int64 { return int64(b.e.line.queued()) }

// LimiterQueued is Queued for a Limiter.
func LimiterQueued(l *Limiter) int64 { return int64(l.e.line.queued()) }
