package procmem

import "testing"

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
