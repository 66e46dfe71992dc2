//go:build linux

package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// floodEnv, when set, makes TestFloodHelper the flooder: a separate
// process (its file descriptors are not the server's, as an attacker's are
// not) that holds up to 300 silent connections to the address, opening a
// new one for each the server closes, until it is killed.
const floodEnv = "CONNLIMIT_FLOOD_ADDR"

func TestFloodHelper(t *testing.T) {
	addr := os.Getenv(floodEnv)
	if addr == "" {
		t.Skip("only run as the flooder of TestIdleFloodDoesNotLockOutRequests")
	}
	slots := make(chan struct{}, 300)
	for dials := 0; ; {
		slots <- struct{}{}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			<-slots
			continue
		}
		if dials++; dials == 200 {
			fmt.Println("ready")
		}
		go func() {
			_, _ = io.Copy(io.Discard, c) // returns when the server closes it
			c.Close()
			<-slots
		}()
	}
}

// A flood of connections that send nothing must not lock real requests
// out, even with few file descriptors (RLIMIT_NOFILE): the server holds at
// most its cap, and a new connection takes the place of the oldest silent
// one. Without the cap the flood takes every descriptor and the request
// cannot even connect.
func TestIdleFloodDoesNotLockOutRequests(t *testing.T) {
	const capConns = 32
	srv, g := Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}), capConns)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(g.Listener(ln)) }()
	defer func() { srv.Close(); <-served }()

	flood := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$")
	flood.Env = append(os.Environ(), floodEnv+"="+ln.Addr().String())
	out, err := flood.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flood.Process.Kill(); _ = flood.Wait() }()

	// Few descriptors: what this process holds now, the cap, and a little.
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(fds) + capConns + 16)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }()

	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("the flooder did not start: %q %v", line, err)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var errs []error
	for range 3 { // Telegram delivers an update again when it fails
		resp, err := client.Post("http://"+ln.Addr().String()+"/hook", "application/json", strings.NewReader(`{"update_id":1}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				errs = nil
				break
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		errs = append(errs, err)
	}
	if errs != nil {
		t.Fatalf("a real request during the flood failed: %v", errs)
	}
	if n := g.Open(); n > capConns {
		t.Errorf("%d connections held, cap %d", n, capConns)
	}
}
