//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The worker's environment: the job to run and its limits. Nothing else of
// the parent's environment (its secrets) reaches a worker.
const (
	envJob = "RECALL_SANDBOX_JOB"
	envCPU = "RECALL_SANDBOX_CPU_SECONDS"
	envMem = "RECALL_SANDBOX_MEMORY_BYTES"
)

// exitJobError is a worker's exit code when its job returned an error (the
// message on stderr); the Go runtime's own fatal errors exit with 2.
const exitJobError = 3

// Serve runs the job named in the environment when this process is a
// worker, and exits; it returns at once otherwise, with the Exec that
// re-executes this program. Call it first thing in main (or TestMain).
func Serve(jobs Jobs) *Exec {
	name, ok := os.LookupEnv(envJob)
	if !ok {
		path, err := os.Executable()
		return &Exec{path: path, err: err}
	}
	os.Exit(serve(jobs, name, os.Stdin, os.Stdout, os.Stderr))
	return nil
}

// serve is a worker's life: limits, input, job, output. It returns the
// exit code.
func serve(jobs Jobs, name string, stdin io.Reader, stdout, stderr io.Writer) int {
	job, ok := jobs[name]
	if !ok {
		fmt.Fprintf(stderr, "no job %q", name)
		return exitJobError
	}
	cpu, err1 := strconv.ParseUint(os.Getenv(envCPU), 10, 64)
	mem, err2 := strconv.ParseUint(os.Getenv(envMem), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(stderr, "the worker's limits: %v", err)
		return exitJobError
	}
	if err := limit(cpu, mem); err != nil {
		fmt.Fprintf(stderr, "setting the worker's limits: %v", err)
		return exitJobError
	}
	input, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "reading the input: %v", err)
		return exitJobError
	}
	out, err := runJob(job, input)
	if err != nil {
		fmt.Fprint(stderr, err)
		return exitJobError
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "writing the output: %v", err)
		return exitJobError
	}
	return 0
}

// runJob runs job, its panics turned into errors.
func runJob(job Job, input []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return job(input)
}

// limit sets the worker's limits on itself: cpu seconds of CPU (then
// SIGKILL: the Go runtime ignores the SIGXCPU of a soft limit) and mem bytes of address
// space above what the process has mapped now; the Go heap is collected
// hard before it gets there. One thread runs Go code.
func limit(cpu, mem uint64) error {
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu}); err != nil {
		return fmt.Errorf("RLIMIT_CPU: %w", err)
	}
	vm, err := vmSize()
	if err != nil {
		return err
	}
	as := vm + mem*addressSpaceScale
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("RLIMIT_AS: %w", err)
	}
	debug.SetMemoryLimit(int64(mem / 2))
	runtime.GOMAXPROCS(1)
	return nil
}

// vmSize is the process's address space now (VmSize of /proc/self/status).
func vmSize() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading the address space's size: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading the address space's size (%q): %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("reading the address space's size: no VmSize in /proc/self/status")
}

// run runs job name on input in a new worker with mem bytes of address
// space, within lim's time, CPU and output.
func (e *Exec) run(ctx context.Context, name string, input []byte, mem int64, lim Limits) ([]byte, error) {
	if e.path == "" && e.err == nil {
		return e.runHere(ctx, name, input, mem, lim)
	}
	if e.err != nil {
		return nil, fmt.Errorf("finding the program to run %s in: %w", name, e.err)
	}
	cpu := uint64((lim.CPU + time.Second - 1) / time.Second)
	tctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, e.path)
	cmd.Env = []string{envJob + "=" + name, envCPU + "=" + strconv.FormatUint(cpu, 10), envMem + "=" + strconv.FormatInt(mem, 10),
		"GOTRACEBACK=none"}
	cmd.Stdin = bytes.NewReader(input)
	out := &capped{max: lim.MaxOutput}
	errOut := &capped{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errOut
	// Killed with the bot (when the thread that started it ends, in
	// fact: the Go runtime keeps its threads).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case err == nil && !out.over:
		return out.buf, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("running %s: %w", name, ctx.Err())
	case tctx.Err() != nil:
		return nil, fmt.Errorf("%w: %s took longer than %s", ErrLimit, name, lim.Timeout)
	case out.over:
		return nil, fmt.Errorf("%w: %s wrote more than %d MiB", ErrLimit, name, lim.MaxOutput>>20)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return nil, fmt.Errorf("running %s in a worker: %w", name, err)
	}
	msg := strings.TrimSpace(string(errOut.buf))
	if ee.ExitCode() == exitJobError {
		return nil, &JobError{Job: name, Msg: msg}
	}
	// RLIMIT_CPU's SIGKILL: the rusage the kernel reports may be a tick
	// short of the limit (seen: well short, under -race).
	used := ee.UserTime() + ee.SystemTime()
	ws, _ := ee.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL && used >= time.Duration(cpu)*time.Second/2:
		return nil, fmt.Errorf("%w: %s used more than %s of CPU", ErrLimit, name, lim.CPU)
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory") ||
		strings.Contains(msg, "address space") || strings.Contains(msg, "failed to allocate"): // the race detector says it so
		return nil, fmt.Errorf("%w: %s needed more than %d MiB of memory", ErrLimit, name, mem>>20)
	}
	return nil, fmt.Errorf("%w: %s died (%v, %s of CPU) %s", ErrLimit, name, ee.ProcessState, used.Round(time.Millisecond), msg)
}
