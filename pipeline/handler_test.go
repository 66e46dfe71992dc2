package pipeline

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// tracing returns a middleware that records entering and leaving, and calls
// next unless consume.
func tracing(trace *[]string, name string, consume bool) Middleware {
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, t *Turn) error {
			*trace = append(*trace, name+">")
			defer func() { *trace = append(*trace, "<"+name) }()
			if consume {
				return nil
			}
			return next.Handle(ctx, t)
		})
	}
}

func TestChain(t *testing.T) {
	errFinal := errors.New("final")
	tests := []struct {
		name    string
		build   func(trace *[]string, final Handler) Handler
		want    []string
		wantErr error
	}{
		{"no middleware", func(_ *[]string, h Handler) Handler { return Chain(h) },
			[]string{"h"}, errFinal},
		{"first is outermost", func(tr *[]string, h Handler) Handler {
			return Chain(h, tracing(tr, "a", false), tracing(tr, "b", false))
		}, []string{"a>", "b>", "h", "<b", "<a"}, errFinal},
		{"consuming stage stops the turn", func(tr *[]string, h Handler) Handler {
			return Chain(h, tracing(tr, "a", false), tracing(tr, "b", true), tracing(tr, "c", false))
		}, []string{"a>", "b>", "<b", "<a"}, nil},
		{"nil middleware skipped", func(tr *[]string, h Handler) Handler {
			return Chain(h, nil, tracing(tr, "a", false), nil)
		}, []string{"a>", "h", "<a"}, errFinal},
	}
	for _, tt := range tests {
		var trace []string
		final := HandlerFunc(func(context.Context, *Turn) error {
			trace = append(trace, "h")
			return errFinal
		})
		err := tt.build(&trace, final).Handle(context.Background(), &Turn{})
		if !slices.Equal(trace, tt.want) {
			t.Errorf("%s: trace %v, want %v", tt.name, trace, tt.want)
		}
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.wantErr)
		}
	}
}

func TestTurnLoggerNil(t *testing.T) {
	(&Turn{}).Logger().Info("discarded") // must not panic
	log, buf := testLogger()
	(&Turn{Log: log}).Logger().Info("kept")
	if buf.String() == "" {
		t.Error("Logger did not return t.Log")
	}
}
