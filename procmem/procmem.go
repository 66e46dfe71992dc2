package procmem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Resident is a process's resident memory, in bytes (/proc/<pid>/status and
// /proc/<pid>/smaps_rollup).
type Resident struct {
	Total int64 // VmRSS
	Anon  int64 // RssAnon: the Go heap and stacks, SQLite's memories
	File  int64 // RssFile: mapped files, the executable's pages
	Peak  int64 // VmHWM: the most ever resident
	// Pss is the proportional set size: the anonymous pages plus each
	// mapped page divided by the number of processes mapping it (a page
	// of the executable shared with a second copy of the bot counts half).
	Pss int64
}

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

// parsePss reads the Pss line out of a /proc/<pid>/smaps_rollup file.
func parsePss(raw string) (int64, error) {
	for _, line := range strings.Split(raw, "\n") {
		v, ok := strings.CutPrefix(line, "Pss:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("reading Pss of the memory map's summary: %q is not a size in kB", strings.TrimSpace(v))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading Pss of the memory map's summary: %w", err)
		}
		return n << 10, nil
	}
	return 0, errors.New("the memory map's summary has no Pss")
}

// ReadPID reads the resident memory of process pid (Linux 4.14 or later:
// PSS comes from smaps_rollup).
func ReadPID(pid int) (Resident, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	raw, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Resident{}, fmt.Errorf("reading the resident memory of process %d (from /proc: Linux only): %w", pid, err)
	}
	r, err := parseStatus(string(raw))
	if err != nil {
		return r, fmt.Errorf("reading the resident memory of process %d: %w", pid, err)
	}
	rollup, err := os.ReadFile(dir + "/smaps_rollup")
	if err != nil {
		return r, fmt.Errorf("reading the proportional memory of process %d (smaps_rollup: Linux 4.14+): %w", pid, err)
	}
	if r.Pss, err = parsePss(string(rollup)); err != nil {
		return r, fmt.Errorf("reading the proportional memory of process %d: %w", pid, err)
	}
	return r, nil
}

// Read reads this process's resident memory.
func Read() (Resident, error) { return ReadPID(os.Getpid()) }
