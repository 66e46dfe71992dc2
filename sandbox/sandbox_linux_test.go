//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testJobs are the jobs this test binary runs as its own worker.
var testJobs = Jobs{
	"echo": func(in []byte) ([]byte, error) { return in, nil },
	"fail": func(in []byte) ([]byte, error) { return nil, errors.New("no text in " + string(in)) },
	"panic": func(in []byte) ([]byte, error) {
		panic("a parser's bug")
	},
	// spin loops forever, as a parser lost in a self-referencing file.
	"spin": func(in []byte) ([]byte, error) {
		n := 0
		for {
			n++
			if n < 0 {
				return nil, nil
			}
		}
	},
	// eat keeps what it allocates, as a decompression bomb's output.
	"eat": func(in []byte) ([]byte, error) {
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = byte(i)
			}
			keep = append(keep, b)
			if len(keep) > 1<<20 {
				return nil, nil
			}
		}
	},
	// hold opens the fifo named by its input and reads it to its end.
	"hold": func(in []byte) ([]byte, error) {
		f, err := os.Open(string(in))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b := make([]byte, 16)
		n, _ := f.Read(b)
		return b[:n], nil
	},
	// environ returns the worker's environment.
	"environ": func([]byte) ([]byte, error) { return []byte(strings.Join(os.Environ(), "\n")), nil },
}

var self *Exec

func TestMain(m *testing.M) {
	self = Serve(testJobs)
	os.Exit(m.Run())
}

func TestJobRunsInAWorker(t *testing.T) {
	t.Setenv("RECALL_LLM_API_KEY", "sk-secret")
	p := NewPool(self, Limits{})
	out, err := p.Run(t.Context(), "echo", []byte("hello"), 0)
	if err != nil || string(out) != "hello" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	env, err := p.Run(t.Context(), "environ", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "sk-secret") || !strings.Contains(string(env), envJob+"=environ") {
		t.Fatalf("the worker's environment:\n%s", env)
	}
}

func TestJobErrorsComeBack(t *testing.T) {
	p := NewPool(self, Limits{})
	_, err := p.Run(t.Context(), "fail", []byte("scan.pdf"), 0)
	var je *JobError
	if !errors.As(err, &je) || je.Msg != "no text in scan.pdf" {
		t.Fatalf("fail: %v", err)
	}
	_, err = p.Run(t.Context(), "panic", nil, 0)
	if !errors.As(err, &je) || !strings.Contains(je.Msg, "panic") {
		t.Fatalf("panic: %v", err)
	}
}

// A job lost in a loop is killed by its CPU limit, or by the clock.
func TestSpinningJobIsStopped(t *testing.T) {
	start := time.Now()
	_, err := NewPool(self, Limits{CPU: time.Second, Timeout: time.Minute}).Run(t.Context(), "spin", nil, 0)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "CPU") {
		t.Fatalf("spin under a CPU limit: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("stopped after %s", d)
	}
	_, err = NewPool(self, Limits{CPU: time.Minute, Timeout: 500 * time.Millisecond}).Run(t.Context(), "spin", nil, 0)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("spin under a deadline: %v", err)
	}
}

// A job that eats memory is stopped at its address space's limit.
func TestGreedyJobIsStopped(t *testing.T) {
	_, err := NewPool(self, Limits{Memory: 128 << 20}).Run(t.Context(), "eat", nil, 100<<20)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("eat: %v", err)
	}
	_, err = NewPool(self, Limits{Memory: 128 << 20}).Run(t.Context(), "echo", nil, 200<<20)
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("a job asking for more than the pool has: %v", err)
	}
}

// No more workers run than the pool has, nor more memory is handed out.
func TestPoolBoundsWorkers(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := NewPool(self, Limits{Workers: 1, Memory: 200 << 20})
	done := make(chan error, 1)
	go func() {
		out, err := p.Run(t.Context(), "hold", []byte(fifo), 0)
		if err == nil && string(out) != "go" {
			err = errors.New("hold read " + string(out))
		}
		done <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once the worker opened it
	if err != nil {
		t.Fatal(err)
	}
	if p.slots.TryAcquire(1) {
		t.Fatal("a second worker could start while one runs")
	}
	if p.mem.TryAcquire(200<<20 - p.Share() + 1) {
		t.Fatal("the running job's memory was handed out again")
	}
	busy := NewPool(self, Limits{Workers: 1, Wait: time.Millisecond})
	busy.slots = p.slots // the same worker, taken
	if _, err := busy.Run(t.Context(), "echo", nil, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("a job waiting past Limits.Wait: %v", err)
	}
	w.Write([]byte("go"))
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !p.slots.TryAcquire(1) || !p.mem.TryAcquire(200<<20) {
		t.Fatal("the worker's slot or memory was not given back")
	}
}
