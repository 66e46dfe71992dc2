// Package figures measures Recall's performance figures, each beside its
// baseline in the same run: the write-behind writer against raw batched
// INSERTs, archive search against seed 002's LIKE scan, the overhead of a
// turn, throughput of concurrent conversations against the ideal, prompt
// tokens against the full history, and the real bot's resident memory and
// start-up time.
//
// It also builds the fixtures they run on (cached databases in
// os.TempDir(), shared by the Go benchmarks and the bench program) and holds
// the application wiring the turn figures run through. Both the Go
// benchmarks (memory/bench_test.go, bench/*_test.go) and the bench program
// (go run ./bench) call it; nothing here asserts on time.
package figures
