package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server if the test binary dies
// first (a panic, a -timeout), so no server outlives its tests.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
