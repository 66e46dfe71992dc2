package procmem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Resident is a process's resident memory, in bytes (/proc/<pid>/status).
type Resident struct {
	Total int64 // VmRSS
	Anon  int64 // RssAnon: the Go heap and stacks, SQLite's memories
	File  int64 // RssFile: mapped files, the executable's pages
	Peak  int64 // VmHWM: the most ever resident
}

// ErrUnsupported is returned where the process cannot give pages of its
// executable back: everywhere but Linux.
var ErrUnsupported = errors.New("the executable's pages are released on Linux only")

// parseStatus reads the resident sizes out of a /proc/<pid>/status file.
func parseStatus(raw string) (Resident, error) {
	var r Resident
	for _, line := range strings.Split(raw, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return r, fmt.Errorf("reading %s of the process status: %w", k, err)
		}
		switch k {
		case "VmRSS":
			r.Total = n << 10
		case "RssAnon":
			r.Anon = n << 10
		case "RssFile":
			r.File = n << 10
		case "VmHWM":
			r.Peak = n << 10
		}
	}
	if r.Total == 0 {
		return r, errors.New("the process status has no VmRSS")
	}
	return r, nil
}

// ReadPID reads the resident memory of process pid.
func ReadPID(pid int) (Resident, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Resident{}, fmt.Errorf("reading the resident memory of process %d (from /proc: Linux only): %w", pid, err)
	}
	return parseStatus(string(raw))
}

// Read reads this process's resident memory.
func Read() (Resident, error) { return ReadPID(os.Getpid()) }
