package procmem

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvDontNeed is MADV_DONTNEED: the pages of the range leave the process;
// a later access maps them again from the file (from the page cache).
const madvDontNeed = 4

// ReleaseExecutable gives back the resident pages of the process's own
// executable that nothing uses any more, and returns how many bytes of
// mapped files left the resident set.
//
// Start-up runs the initialisation of every package linked in (the WhatsApp
// library's protocol descriptors, PostgreSQL's type tables, …) and the
// first SQLite statements, and the kernel maps 64 KiB around each page it
// touches: right after start-up nearly all of the executable's code and
// read-only data (~25 MB) is resident, though a turn uses less of it. This
// unmaps the read-only mappings of the executable (code, constant data, the
// runtime's function tables). The pages stay in the kernel's page cache;
// the next use of one maps it again, a minor fault that reads no disk, so
// what stays resident afterwards is what the bot goes on using. Writable
// mappings (the data segment, written at start) are never touched: their
// pages are the process's own.
func ReleaseExecutable() (int64, error) {
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("finding the executable: %w", err)
	}
	st, ok := exe.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, ErrUnsupported
	}
	ranges, err := readOnlyMappings("/proc/self/maps", st.Dev, st.Ino)
	if err != nil {
		return 0, err
	}
	before, err := Read()
	if err != nil {
		return 0, err
	}
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1]-r[0], madvDontNeed); errno != 0 {
			return 0, fmt.Errorf("releasing the executable's pages at %#x: %w", r[0], errno)
		}
	}
	after, err := Read()
	if err != nil {
		return 0, err
	}
	return max(before.File-after.File, 0), nil
}

// readOnlyMappings lists the address ranges [start, end) of the mappings in
// the maps file (/proc/<pid>/maps) of the file dev/ino that are readable and
// not writable.
func readOnlyMappings(path string, dev, ino uint64) ([][2]uintptr, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the memory map: %w", err)
	}
	defer f.Close()
	var out [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00400000-01224000 r-xp 00000000 fe:00 10022351   /path/to/bot
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		perms := fields[1]
		if len(perms) < 2 || perms[0] != 'r' || perms[1] == 'w' {
			continue
		}
		if n, err := strconv.ParseUint(fields[4], 10, 64); err != nil || n != ino {
			continue
		}
		if !sameDevice(fields[3], dev) {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, [2]uintptr{uintptr(start), uintptr(end)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the memory map: %w", err)
	}
	return out, nil
}

// sameDevice reports whether the maps file's "major:minor" (hex) is dev, a
// stat device number.
func sameDevice(s string, dev uint64) bool {
	ma, mi, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	major, err1 := strconv.ParseUint(ma, 16, 32)
	minor, err2 := strconv.ParseUint(mi, 16, 32)
	if err1 != nil || err2 != nil {
		return false
	}
	devMajor := (dev>>8)&0xfff | (dev>>32)&^0xfff
	devMinor := dev&0xff | (dev>>12)&^0xff
	return major == devMajor && minor == devMinor
}
