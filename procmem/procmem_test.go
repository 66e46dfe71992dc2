package procmem

import (
	"os"
	"testing"
)

func TestParseStatus(t *testing.T) {
	raw := "Name:\tbot\nVmPeak:\t 1300000 kB\nVmHWM:\t   40000 kB\nVmRSS:\t   33600 kB\nRssAnon:\t    8900 kB\nRssFile:\t   24700 kB\nRssShmem:\t       0 kB\nThreads:\t7\n"
	got, err := parseStatus(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := Resident{Total: 33600 << 10, Anon: 8900 << 10, File: 24700 << 10, Peak: 40000 << 10}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseStatus("Name:\tbot\n"); err == nil {
		t.Error("a status without VmRSS was read without an error")
	}
}

func TestParsePss(t *testing.T) {
	raw := "55d0c8a4e000-7ffd1c5f4000 ---p 00000000 00:00 0                          [rollup]\nRss:               33600 kB\nPss:               21345 kB\nPss_Anon:           8900 kB\nPss_File:          12445 kB\n"
	got, err := parsePss(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got != 21345<<10 {
		t.Errorf("Pss = %d, want %d", got, 21345<<10)
	}
	if _, err := parsePss("Rss:  1 kB\n"); err == nil {
		t.Error("a summary without Pss was read without an error")
	}
}

// This process's own figures are read, PSS among them: at most the
// resident size, and at least its anonymous part (never shared). The two
// come from two files read one after the other (status, smaps_rollup), so
// the process may grow a little between them: 1 MiB of slack.
func TestReadThisProcess(t *testing.T) {
	r, err := ReadPID(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const slack = 1 << 20
	if r.Pss <= 0 || r.Pss > r.Total+slack || r.Anon > r.Pss+slack || r.Anon+r.File > r.Total+slack {
		t.Errorf("implausible figures: %+v", r)
	}
}
