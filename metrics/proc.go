package metrics

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
)

// userHZ is the kernel's clock tick for /proc times (100 on every Linux
// Prometheus' own process collector supports).
const userHZ = 100

// procStat is what the process collector reads from /proc/self/stat.
type procStat struct {
	cpuSeconds float64
	rss        float64
	vsize      float64
	start      float64 // seconds since the epoch; 0 when unknown
}

// readProcStat reads /proc/self/stat (and the boot time from /proc/stat).
func readProcStat() (procStat, error) {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces: fields are
	// counted after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("reading /proc/self/stat: no command name")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 22 {
		return procStat{}, errors.New("reading /proc/self/stat: too few fields")
	}
	num := func(n int) float64 {
		v, _ := strconv.ParseFloat(f[n-3], 64)
		return v
	}
	st := procStat{
		cpuSeconds: (num(14) + num(15)) / userHZ,
		vsize:      num(23),
		rss:        num(24) * float64(os.Getpagesize()),
	}
	if boot := bootTime(); boot > 0 {
		st.start = boot + num(22)/userHZ
	}
	return st, nil
}

// bootTime is the btime line of /proc/stat: the boot time in seconds since
// the epoch; 0 when unknown.
func bootTime() float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			b, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return b
		}
	}
	return 0
}

// maxFDs is the soft limit of open files from /proc/self/limits; 0 when
// unknown.
func maxFDs() float64 {
	data, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				return v
			}
		}
	}
	return 0
}
