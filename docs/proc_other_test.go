//go:build !unix

package docs

import "os/exec"

// ownGroup: without process groups, the context kills the shell alone.
func ownGroup(*exec.Cmd) {}
