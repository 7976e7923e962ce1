// Package hoststore keeps rate limits and spend budgets in one file on the
// local disk, which every process of a host that opens it shares: cron
// jobs, `xargs -P` workers and CLI agents on one quota, with no server to
// run. A Limiter is a throttle.Gate, and a Store is a budget.Store.
//
// Every decision is one read and one write of a 128-byte record under an
// exclusive lock on a lock file beside the data file, which each Store
// holds open: flock(2) on Unix systems, LockFileEx on Windows (both through
// golang.org/x/sys). The kernel drops the lock of a process that dies,
// kill -9 included (Windows says it may take a moment), so a process
// killed while it holds the lock leaves no one stuck, and the record's
// single write either happened or did not. The state is in the file, so a
// restarted process finds it at once. A power loss may lose the last writes the kernel had not flushed;
// a record whose checksum does not match is reported as an error.
package hoststore
