package llm

import "testing"

// After Preload the counter's tables are built: the first user's turn does
// not build them.
func TestPreloadBuildsTheTablesBeforeTheFirstCount(t *testing.T) {
	c := NewCounter("gpt-4o").(*lazyCounter)
	if c.c != nil {
		t.Fatal("a new counter has its tables already")
	}
	Preload(c)
	if c.c == nil {
		t.Fatal("Preload left the tables to the first count")
	}
	if _, ok := c.c.(*tiktokenCounter); !ok {
		t.Fatalf("after Preload the counter is a %T, want the exact tokenizer", c.c)
	}
	if got := c.Count("hello world"); got != 2 {
		t.Fatalf("Count after Preload = %d, want 2", got)
	}
	Preload(NewCounter("llama3")) // an estimate has nothing to load
}
