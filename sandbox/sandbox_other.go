//go:build !linux

package sandbox

import "context"

// Serve returns the jobs to run in the process: off Linux there are no
// workers (no child process limits), and inputs are capped instead.
func Serve(jobs Jobs) *Exec { return InProcess(jobs) }

func (e *Exec) run(ctx context.Context, name string, input []byte, mem int64, lim Limits) ([]byte, error) {
	return e.runHere(ctx, name, input, mem, lim)
}
