package benchmarks

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill a child process (the delay proxy)
// if the benchmark binary dies first.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
