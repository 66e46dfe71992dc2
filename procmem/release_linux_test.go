package procmem

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// written is changed at run time: the data segment's page that holds it is
// the process's own, and releasing the executable must not lose it.
var written = "as built"

func TestReleaseExecutableGivesBackStartupPages(t *testing.T) {
	written = "changed while running"
	before, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	released, err := ReleaseExecutable()
	if err != nil {
		t.Fatal(err)
	}
	after, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mapped files resident: %d KiB before, %d KiB after; %d KiB released", before.File>>10, after.File>>10, released>>10)
	if released <= 0 || after.File >= before.File {
		t.Errorf("mapped files resident: %d KiB before, %d KiB after (released %d KiB); want fewer after", before.File>>10, after.File>>10, released>>10)
	}
	if written != "changed while running" {
		t.Errorf("a variable changed at run time reads %q after the release: the data segment was released", written)
	}
	// The code keeps running: what was released maps again when used.
	if _, err := Read(); err != nil {
		t.Fatal(err)
	}
}

func TestReadOnlyMappingsOfTheExecutableOnly(t *testing.T) {
	maps := `00400000-01224000 r-xp 00000000 fe:00 10022351                           /opt/bot
01224000-02468000 r--p 00e24000 fe:00 10022351                           /opt/bot
02468000-0251c000 rw-p 02068000 fe:00 10022351                           /opt/bot
0251c000-02560000 rw-p 00000000 00:00 0
2b686e000000-2b6870800000 rw-p 00000000 00:00 0
7fe432841000-7fe432997000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7fe432997000-7fe4329a0000 r-xp 00026000 fe:01 10022351                     /other/disk/same-inode
7ffd1c5f0000-7ffd1c5f4000 ---p 00000000 00:00 0
`
	path := filepath.Join(t.TempDir(), "maps")
	if err := os.WriteFile(path, []byte(maps), 0o600); err != nil {
		t.Fatal(err)
	}
	// fe:00 is major 254, minor 0.
	got, err := readOnlyMappings(path, 254<<8, 10022351)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]uintptr{{0x400000, 0x1224000}, {0x1224000, 0x2468000}}
	if !slices.Equal(got, want) {
		t.Errorf("got %#x, want %#x: the executable's code and read-only data, not its data segment, nor other files", got, want)
	}
}
