// Package procmem owns what the bot knows of a process's resident memory
// (Linux, from /proc): its total (VmRSS), how much of it is anonymous (the
// Go heap and stacks, SQLite's memories: what the host pays for the process
// alone) and mapped from files (the executable's pages, which the kernel
// shares and reclaims at will), and its proportional share (PSS).
package procmem
