//go:build unix

package pgtest

import (
	"os/exec"
	"syscall"
)

// runAs makes cmd run as the user uid (and group gid).
func runAs(cmd *exec.Cmd, uid, gid int) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
}
