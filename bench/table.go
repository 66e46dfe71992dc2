package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// row is one figure beside its baseline.
type row struct {
	Figure   string             `json:"figure"`
	Ours     string             `json:"ours"`
	Baseline string             `json:"baseline"`
	Ratio    string             `json:"ratio"`
	Scale    string             `json:"scale"`
	Values   map[string]float64 `json:"values,omitempty"` // the raw numbers
}

// machine describes where the figures were measured.
type machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	OS      string `json:"os"`
	Go      string `json:"go"`
	Date    string `json:"date"`
	LoadAvg string `json:"load_avg,omitempty"` // at the start: other work on the machine
}

type report struct {
	Machine machine `json:"machine"`
	Scale   string  `json:"scale"`
	Took    string  `json:"took"`
	Rows    []row   `json:"rows"`
}

func describeMachine() machine {
	m := machine{CPU: "unknown", Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Go: runtime.Version(), Date: time.Now().UTC().Format("2006-01-02 15:04 MST")}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(raw)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// write prints the header and the rows as an aligned table.
func (r report) write(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "Recall figures (%s scale), %s\n", r.Scale, m.Date)
	fmt.Fprintf(w, "%s, %d cores, %s, %s", m.CPU, m.Cores, m.OS, m.Go)
	if m.LoadAvg != "" {
		fmt.Fprintf(w, ", load average %s at the start", m.LoadAvg)
	}
	fmt.Fprintf(w, "; run took %s\n\n", r.Took)
	cells := [][]string{{"figure", "ours", "baseline", "ratio", "scale"}}
	for _, x := range r.Rows {
		cells = append(cells, []string{x.Figure, x.Ours, x.Baseline, x.Ratio, x.Scale})
	}
	width := make([]int, len(cells[0]))
	for _, c := range cells {
		for i, s := range c {
			width[i] = max(width[i], utf8.RuneCountInString(s))
		}
	}
	line := func(c []string) {
		var b strings.Builder
		for i, s := range c {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(s)
			if i < len(c)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(s)))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(cells[0])
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
	}
	fmt.Fprintln(w, strings.Join(sep, "-|-"))
	for _, c := range cells[1:] {
		line(c)
	}
}

// Formatting of values.

func fmtMS(ms float64) string {
	switch {
	case ms >= 100:
		return thousands(int64(ms+0.5)) + " ms"
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	}
}

func fmtRate(v float64, unit string) string {
	return thousands(int64(v+0.5)) + " " + unit
}

func fmtMiB(bytes int64) string {
	return strconv.FormatFloat(float64(bytes)/(1<<20), 'f', 1, 64) + " MiB"
}

// fmtRatio is a/b, "×" after it.
func fmtRatio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	r := a / b
	switch {
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64) + "×"
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 1, 64) + "×"
	case r >= 0.1:
		return strconv.FormatFloat(r, 'f', 2, 64) + "×"
	default: // two significant digits
		return strconv.FormatFloat(r, 'g', 2, 64) + "×"
	}
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
