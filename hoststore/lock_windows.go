//go:build windows

package hoststore

import (
	"math"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes LockFileEx's exclusive lock on the whole of f, waiting for
// it: Windows's counterpart of flock(2). Windows releases the locks of a
// process that ends, killed included, though its documentation allows that
// to take a moment.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, math.MaxUint32, math.MaxUint32, &ol)
}

// unlockFile releases lockFile's lock.
func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, math.MaxUint32, math.MaxUint32, &ol)
}
