package console

// WithEditor is WithTerminal without raw mode: tests speak the terminal's
// bytes through a pipe.
func WithEditor() Option { return func(a *Adapter) { a.editor = true } }
