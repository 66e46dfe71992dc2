// Package procmem owns what the bot knows of its own resident memory: how
// much of it is anonymous (the Go heap and stacks, SQLite's memories) and how
// much is mapped from files (the executable's code and tables), and giving
// back the pages of the executable that only start-up used.
package procmem
