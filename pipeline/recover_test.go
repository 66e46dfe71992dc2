package pipeline

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRecover(t *testing.T) {
	tests := []struct {
		name      string
		h         HandlerFunc
		wantPanic bool
		wantIs    error
	}{
		{"no panic", func(context.Context, *Turn) error { return nil }, false, nil},
		{"error passes", func(context.Context, *Turn) error { return io.EOF }, false, io.EOF},
		{"string panic", func(context.Context, *Turn) error { panic("boom") }, true, nil},
		{"error panic", func(context.Context, *Turn) error { panic(io.ErrUnexpectedEOF) }, true, io.ErrUnexpectedEOF},
		{"nil map write", func(context.Context, *Turn) error {
			var m map[string]int
			//lint:ignore SA5000 the stage under test must recover from this panic
			m["x"] = 1
			return nil
		}, true, nil},
	}
	for _, tt := range tests {
		err := Chain(tt.h, Recover()).Handle(context.Background(), &Turn{})
		var pe *PanicError
		if got := errors.As(err, &pe); got != tt.wantPanic {
			t.Errorf("%s: panic error %v, want %v (err %v)", tt.name, got, tt.wantPanic, err)
			continue
		}
		if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
			t.Errorf("%s: err %v does not wrap %v", tt.name, err, tt.wantIs)
		}
		if pe != nil && !strings.Contains(string(pe.Stack), "recover_test.go") {
			t.Errorf("%s: stack does not show the panicking test:\n%s", tt.name, pe.Stack)
		}
	}
}
