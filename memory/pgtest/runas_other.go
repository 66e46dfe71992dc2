//go:build !unix

package pgtest

import "os/exec"

// runAs is not needed where there is no root to refuse: cmd runs as this
// process's user.
func runAs(cmd *exec.Cmd, uid, gid int) {}
