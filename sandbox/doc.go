// Package sandbox runs parsers of untrusted input (PDFs, images) where they
// can be stopped: in a child process, the program itself re-executed as a
// worker, under a wall-clock deadline, a CPU-time limit (RLIMIT_CPU) and an
// address-space limit (RLIMIT_AS), and killed when over any of them. Go
// cannot stop a goroutine stuck in a library's loop, nor take back the
// gigabytes a decompression bomb asks for; a process can be killed.
//
// It owns the worker's protocol (the job's name and limits in the
// environment, the input on stdin, the output on stdout), the limits set in
// the child before its job runs, and the bounds on what runs at once: a
// number of workers and a budget of memory shared by them (each job asks
// for its share and waits for it).
//
// A program that uses it calls Serve first thing in main, before anything
// else runs: in a worker Serve runs the job and exits; otherwise it returns
// the Exec a Pool re-executes. Tests of a package whose code reaches a Pool
// call Serve first thing in TestMain, so the test binary is its own worker.
//
// On systems other than Linux jobs run in the process, with their input's
// size capped (sandbox_other.go).
package sandbox
