package metrics

import (
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// expo builds a scrape in the Prometheus text format, adding the replica
// label (when set) to every series.
type expo struct {
	replica string
	b       []byte
}

// family writes a family's HELP and TYPE lines.
func (e *expo) family(name, help, typ string) {
	e.b = append(e.b, "# HELP "...)
	e.b = append(e.b, name...)
	e.b = append(e.b, ' ')
	e.b = append(e.b, strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help)...)
	e.b = append(e.b, "\n# TYPE "...)
	e.b = append(e.b, name...)
	e.b = append(e.b, ' ')
	e.b = append(e.b, typ...)
	e.b = append(e.b, '\n')
}

// sample writes one series; labels are written sorted by name, as
// Prometheus' own client does.
func (e *expo) sample(name string, labels, values []string, v float64) {
	type pair struct{ k, v string }
	pairs := make([]pair, 0, len(labels)+1)
	for i, l := range labels {
		pairs = append(pairs, pair{l, values[i]})
	}
	if e.replica != "" {
		pairs = append(pairs, pair{"replica", e.replica})
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	e.b = append(e.b, name...)
	if len(pairs) > 0 {
		e.b = append(e.b, '{')
		for i, p := range pairs {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, p.k...)
			e.b = append(e.b, `="`...)
			e.b = append(e.b, labelEscaper.Replace(p.v)...)
			e.b = append(e.b, '"')
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ' ')
	e.b = append(e.b, formatFloat(v)...)
	e.b = append(e.b, '\n')
}

// single writes a family of one unlabelled series.
func (e *expo) single(name, help, typ string, v float64) {
	e.family(name, help, typ)
	e.sample(name, nil, nil, v)
}

func (e *expo) bytes() []byte { return e.b }

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// seriesKey joins label values into a map key (values never hold NUL:
// NUL cannot be in a label value of the text format either).
func seriesKey(values []string) string { return strings.Join(values, "\x00") }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeGo writes the Go runtime's figures under the names Prometheus' Go
// collector uses.
func writeGo(e *expo) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	e.single("go_goroutines", "Number of goroutines that currently exist.", "gauge", float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	e.single("go_threads", "Number of OS threads created.", "gauge", float64(threads))
	e.family("go_info", "Information about the Go environment.", "gauge")
	e.sample("go_info", []string{"version"}, []string{runtime.Version()}, 1)
	e.single("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", "gauge", float64(ms.HeapAlloc))
	e.single("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", "counter", float64(ms.TotalAlloc))
	e.single("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", "gauge", float64(ms.HeapIdle))
	e.single("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", "gauge", float64(ms.HeapInuse))
	e.single("go_memstats_heap_objects", "Number of currently allocated objects.", "gauge", float64(ms.HeapObjects))
	e.single("go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", "gauge", float64(ms.HeapReleased))
	e.single("go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", "gauge", float64(ms.HeapSys))
	e.single("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", "gauge", float64(ms.NextGC))
	e.single("go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", "gauge", float64(ms.StackInuse))
	e.single("go_memstats_sys_bytes", "Number of bytes obtained from system.", "gauge", float64(ms.Sys))
	e.single("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", "gauge", float64(ms.LastGC)/1e9)
	e.single("go_gc_cycles_total", "Completed garbage collection cycles.", "counter", float64(ms.NumGC))
	e.single("go_gc_pause_seconds_total", "Total time the world was stopped for garbage collection.", "counter", float64(ms.PauseTotalNs)/1e9)
}

// writeProcess writes the process's CPU time, memory, file descriptors and
// start time under the names Prometheus' process collector uses (Linux: read
// from /proc; elsewhere nothing).
func writeProcess(e *expo) {
	st, err := readProcStat()
	if err != nil {
		return
	}
	e.single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", st.cpuSeconds)
	e.single("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", st.rss)
	e.single("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", st.vsize)
	if st.start > 0 {
		e.single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge", st.start)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		e.single("process_open_fds", "Number of open file descriptors.", "gauge", float64(len(fds)))
	}
	if max := maxFDs(); max > 0 {
		e.single("process_max_fds", "Maximum number of open file descriptors.", "gauge", max)
	}
}
