package format

import "testing"

// BenchmarkRenderSplit renders and splits the 9,000-character reply, the
// adapter's path for a long answer; BenchmarkRender and BenchmarkSplit
// measure the two halves side by side.
func BenchmarkRenderSplit(b *testing.B) {
	md := longReply()
	b.SetBytes(int64(len(md)))
	parts := 0
	for b.Loop() {
		parts = len(Split(Render(md), Limit))
	}
	b.ReportMetric(float64(parts), "parts")
}

func BenchmarkRender(b *testing.B) {
	md := longReply()
	b.SetBytes(int64(len(md)))
	for b.Loop() {
		_ = Render(md)
	}
}

func BenchmarkSplit(b *testing.B) {
	html := Render(longReply())
	b.SetBytes(int64(len(html)))
	parts := 0
	for b.Loop() {
		parts = len(Split(html, Limit))
	}
	b.ReportMetric(float64(parts), "parts")
}

func BenchmarkPlainSplitPlain(b *testing.B) {
	md := longReply()
	b.SetBytes(int64(len(md)))
	parts := 0
	for b.Loop() {
		parts = len(SplitPlain(Plain(md), Limit))
	}
	b.ReportMetric(float64(parts), "parts")
}
