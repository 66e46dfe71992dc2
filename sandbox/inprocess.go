package sandbox

import (
	"context"
	"fmt"
)

// Exec is what a Pool runs its jobs with: this program re-executed as a
// worker (Serve, on Linux), or the jobs themselves in the process
// (InProcess, and Serve elsewhere).
type Exec struct {
	path string // the program re-executed; "" in the process
	err  error  // finding the program
	jobs Jobs   // the jobs run in the process
}

// InProcess returns an Exec that runs jobs in the calling process: nothing
// stops a job that loops or eats memory, so inputs are capped at a quarter
// of the job's memory share. For tests, tools and systems without workers;
// the bot's untrusted inputs go to workers (Serve).
func InProcess(jobs Jobs) *Exec { return &Exec{jobs: jobs} }

// runHere runs job name in the process.
func (e *Exec) runHere(ctx context.Context, name string, input []byte, mem int64, lim Limits) (out []byte, err error) {
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
			out, err = nil, &JobError{Job: name, Msg: fmt.Sprint("panic: ", r)}
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
