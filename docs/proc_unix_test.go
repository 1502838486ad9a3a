//go:build unix

package docs

import (
	"os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own, which its context
// kills whole: a shell loop's subshells, too, which would otherwise keep
// running, and keep its output open, once the shell is killed.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
