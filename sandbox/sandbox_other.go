//go:build !linux

package sandbox

import (
	"context"
	"fmt"
)

// Exec is what a Pool runs jobs with. Off Linux: the jobs themselves, run
// in the process (no child process limits here), their input capped at
// the job's memory share.
type Exec struct {
	jobs Jobs
}

// Serve returns the jobs to run in the process (no workers off Linux).
func Serve(jobs Jobs) *Exec { return &Exec{jobs: jobs} }

func (e *Exec) run(ctx context.Context, name string, input []byte, mem int64, lim Limits) (out []byte, err error) {
	job, ok := e.jobs[name]
	if !ok {
		return nil, fmt.Errorf("no job %q", name)
	}
	if int64(len(input)) > mem/4 {
		return nil, fmt.Errorf("%w: the input (%d KiB) is over a quarter of the job's memory", ErrLimit, len(input)>>10)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &JobError{Job: name, Msg: fmt.Sprint(r)}
		}
	}()
	out, err = job(input)
	if err != nil {
		return nil, &JobError{Job: name, Msg: err.Error()}
	}
	if int64(len(out)) > lim.MaxOutput {
		return nil, fmt.Errorf("%w: the output is over %d MiB", ErrLimit, lim.MaxOutput>>20)
	}
	return out, nil
}
