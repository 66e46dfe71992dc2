package docs_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// compose returns the command that runs Docker Compose here (the docker CLI's
// plugin, or the standalone docker-compose), or skips the test.
func compose(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: each docker compose config takes seconds (30 s for both tests with docker-compose 1.29 on a busy 2-core machine); go test without -short runs it")
	}
	for _, c := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		if _, err := exec.LookPath(c[0]); err != nil {
			continue
		}
		if exec.Command(c[0], append(c[1:], "version")...).Run() == nil {
			return c
		}
	}
	t.Skip("Docker Compose is not installed (docker compose or docker-compose)")
	return nil
}

// composeService is what the test reads of a service in `config`'s output.
type composeService struct {
	Profiles    []string          `yaml:"profiles"`
	DependsOn   map[string]any    `yaml:"depends_on"`
	Environment map[string]string `yaml:"environment"`
	Ports       []any             `yaml:"ports"`
}

// composeConfig runs `compose --profile profile config` on a copy of
// docker-compose.yml beside an empty .env (the file names it in env_file) and
// returns the services it defines.
func composeConfig(t *testing.T, cmd []string, profile string, env ...string) map[string]composeService {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, cmd[0], append(cmd[1:], "--profile", profile, "config")...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s --profile %s config: %v\n%s", strings.Join(cmd, " "), profile, err, stderr.String())
	}
	var cfg struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("reading the config: %v\n%s", err, out)
	}
	return cfg.Services
}

// started returns the services `up` starts under profile, by Compose's rule: a
// service without profiles always, one with profiles when profile is among
// them. (Compose v2's `config` already leaves the others out.)
func started(services map[string]composeService, profile string) []string {
	var out []string
	for name, s := range services {
		if len(s.Profiles) == 0 || slices.Contains(s.Profiles, profile) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Each profile of docker-compose.yml starts exactly its setup: sqlite the one
// bot; postgres the database, the migration, three replicas and Caddy, and
// never the SQLite bot beside them (it would answer the same Telegram bot).
func TestComposeProfiles(t *testing.T) {
	cmd := compose(t)
	for profile, want := range map[string][]string{
		"sqlite":   {"recall"},
		"postgres": {"postgres", "proxy", "recall-1", "recall-2", "recall-3", "recall-migrate"},
	} {
		services := composeConfig(t, cmd, profile, "POSTGRES_PASSWORD=s3cret")
		got := started(services, profile)
		if !slices.Equal(got, want) {
			t.Errorf("--profile %s starts %v, want %v", profile, got, want)
		}
		for _, name := range got {
			for dep := range services[name].DependsOn {
				if !slices.Contains(got, dep) {
					t.Errorf("--profile %s: %s depends on %s, which the profile does not start", profile, name, dep)
				}
			}
		}
		if profile != "postgres" {
			continue
		}
		for _, name := range []string{"recall-1", "recall-migrate"} {
			if url := services[name].Environment["RECALL_DATABASE_URL"]; !strings.Contains(url, ":s3cret@postgres:") {
				t.Errorf("%s's RECALL_DATABASE_URL %q does not carry POSTGRES_PASSWORD", name, url)
			}
		}
		if len(services["proxy"].Ports) != 3 {
			t.Errorf("Caddy publishes %d ports, want 3 (8080, and 80/443 for a domain's certificate): %v", len(services["proxy"].Ports), services["proxy"].Ports)
		}
	}
}

// Without POSTGRES_PASSWORD the sqlite profile still loads (no required
// variable stops it), and the postgres profile's database refuses to start
// with a message that says what to set.
func TestComposeWithoutPostgresPassword(t *testing.T) {
	cmd := compose(t)
	if got := started(composeConfig(t, cmd, "sqlite", "POSTGRES_PASSWORD="), "sqlite"); !slices.Equal(got, []string{"recall"}) {
		t.Errorf("--profile sqlite without POSTGRES_PASSWORD starts %v", got)
	}
	raw, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "set POSTGRES_PASSWORD in .env") {
		t.Errorf("the postgres service does not say what to set when POSTGRES_PASSWORD is empty")
	}
}
