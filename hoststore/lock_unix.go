//go:build unix

package hoststore

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes flock(2)'s exclusive lock on f, waiting for it. The lock
// is the open file's: the kernel drops it when its holder dies, kill -9
// included.
func lockFile(f *os.File) error { return flock(int(f.Fd()), unix.LOCK_EX) }

// unlockFile releases lockFile's lock.
func unlockFile(f *os.File) error { return flock(int(f.Fd()), unix.LOCK_UN) }

// flock is flock(2), retried when a signal interrupts it.
func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}
