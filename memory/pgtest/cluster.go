package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Cluster is a throwaway PostgreSQL server of one test, started by Start
// the way .ci/postgres starts one: initdb into a temporary directory,
// listening on 127.0.0.1 and a Unix socket in that directory, fsync off.
type Cluster struct {
	Dir  string // the Unix socket's directory (host=Dir connects through it)
	Port int    // the TCP port on 127.0.0.1
}

// ClusterOptions shape a Cluster before it starts.
type ClusterOptions struct {
	// Conf lines are appended to postgresql.conf (ssl = on, …).
	Conf []string
	// HBA replaces pg_hba.conf when not empty.
	HBA string
	// Files are written into the data directory, owned by the server's
	// user with mode 0600 (server.crt, server.key, …), by name.
	Files map[string][]byte
}

// Start initialises and starts a PostgreSQL cluster as opts say, stopped
// and removed when t ends. It skips t when PostgreSQL's initdb is not
// installed, or when the test runs as root and there is no postgres user
// to run the server as (initdb refuses root).
func Start(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	bin := serverBin()
	if bin == "" {
		t.Skip("PostgreSQL's initdb is not installed (apt-get install postgresql, or run .ci/postgres once)")
	}
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root and there is no postgres user to run the server as (initdb refuses root)")
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	dir, err := os.MkdirTemp("", "recall-pg.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		if uid >= 0 {
			runAs(cmd, uid, gid)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		t.Fatalf("initialising a PostgreSQL cluster: %v", err)
	}
	write := func(name string, b []byte, mode os.FileMode) {
		p := filepath.Join(data, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if uid >= 0 {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, b := range opts.Files {
		write(name, b, 0o600)
	}
	if opts.HBA != "" {
		write("pg_hba.conf", []byte(opts.HBA), 0o600)
	}
	conf, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conf.WriteString("\n" + strings.Join(opts.Conf, "\n") + "\n")
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	o := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c unix_socket_directories=%s", port, dir)
	if err := run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-o", o, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("starting PostgreSQL: %v\n%s", err, log)
	}
	t.Cleanup(func() {
		if err := run("pg_ctl", "-D", data, "-m", "immediate", "stop"); err != nil {
			t.Errorf("stopping PostgreSQL: %v", err)
		}
	})
	return &Cluster{Dir: dir, Port: port}
}

// serverBin is the newest installed PostgreSQL's bin directory, or "".
func serverBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r)
		}
	}
	return ""
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}
