package hoststore

// LockFile is the store's own lock of a lock file (flock(2), LockFileEx),
// for a child process of the tests that holds the lock as a Store would.
var LockFile = lockFile
