package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The binary builds without cgo, as the Dockerfile builds it (which adds
// -trimpath; left out here, where it would recompile everything), and runs
// with an empty environment: static, no libc, nothing it needs from the
// environment to print its version.
func TestStaticBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Docker image is linux")
	}
	if testing.Short() {
		t.Skip("builds the binary once more (-short)")
	}
	bin := filepath.Join(t.TempDir(), "bot")
	build := exec.Command("go", "build", "-ldflags", "-s -w -X main.version=9.9.9-static", "-o", bin, "github.com/recallbot/recall/cmd/bot")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = []string{} // env -i
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "recall 9.9.9-static" {
		t.Fatalf("env -i bot version: %q, %v", out, err)
	}
}
