package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallbot/recall/memory"
	"github.com/recallbot/recall/pipeline"
)

// `bot backup` while another process keeps writing: the copy passes
// PRAGMA integrity_check, holds every row committed before it started, and
// restores (the documented steps) into a working data dir.
func TestBackupWhileWriting(t *testing.T) {
	ctx := t.Context()
	env := newEnv(t, "")
	s, err := memory.Open(ctx, memory.Options{Dir: env.Data})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(cctx); err != nil {
			t.Error(err)
		}
	}()
	// One owner on JSON storage: its file is copied beside the backup.
	jsonKey := pipeline.Key{Channel: "telegram", Chat: "7"}
	if err := s.Append(ctx, backupExchange(jsonKey, 0)...); err != nil {
		t.Fatal(err)
	}
	if err := s.Move(ctx, jsonKey.Owner(), memory.StorageJSON); err != nil {
		t.Fatal(err)
	}

	key := pipeline.Key{Channel: "telegram", Chat: "42"}
	var committed atomic.Int64 // exchanges committed (Append returned)
	warm := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Append(ctx, backupExchange(key, i)...); err != nil {
				t.Errorf("writing exchange %d: %v", i, err)
				return
			}
			if committed.Add(1) == 50 {
				close(warm)
			}
		}
	})
	<-warm
	before := committed.Load()
	file := filepath.Join(t.TempDir(), "recall-backup.db")
	r := env.run(t, "", "backup", file)
	during := committed.Load() - before
	close(stop)
	wg.Wait()
	if r.Code != 0 {
		t.Fatalf("bot backup:\n%s", r)
	}
	var out struct {
		Backup    string `json:"backup"`
		Bytes     int64  `json:"bytes"`
		JSONFiles int    `json:"json_files"`
		JSONDir   string `json:"json_dir"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || out.Backup != file || out.Bytes == 0 || out.JSONFiles != 1 || out.JSONDir != file+".json.d" {
		t.Errorf("bot backup printed %q (%v)", r.Stdout, err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want 0600", st.Mode().Perm())
	}
	jsonFiles, _ := filepath.Glob(filepath.Join(file+".json.d", "*.json"))
	if len(jsonFiles) != 1 {
		t.Fatalf("JSON files beside the backup: %v", jsonFiles)
	}
	if st, err := os.Stat(jsonFiles[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("copied JSON file: %v %v", st.Mode(), err)
	}

	db, err := memory.OpenSQLite(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if got := integrityCheck(t, db); got != "ok" {
		t.Errorf("PRAGMA integrity_check of the backup: %s", got)
	}
	var rows int64
	if err := db.DB().QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if rows < 2*before {
		t.Errorf("the backup holds %d messages; %d were committed before it started", rows, 2*before)
	}
	t.Logf("backup of %d bytes: %d messages; %d committed before it started, %d exchanges written while it ran", out.Bytes, rows, 2*before, during)

	// Never overwrite.
	if st, err = os.Stat(file); err != nil {
		t.Fatal(err)
	}
	r = env.run(t, "", "backup", file)
	if r.Code != 1 || !strings.Contains(r.Stderr, "refusing to overwrite") {
		t.Errorf("a second backup to the same file:\n%s", r)
	}
	if st2, _ := os.Stat(file); st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the existing backup was touched")
	}

	// Restore into a new data dir, as docs/operations.md says ("Backup and restore"): recall.db from the
	// backup, json/ from FILE.json.d.
	restored := newEnv(t, "")
	if err := os.MkdirAll(filepath.Join(restored.Data, "json"), 0o700); err != nil {
		t.Fatal(err)
	}
	copyForTest(t, file, filepath.Join(restored.Data, "recall.db"))
	copyForTest(t, jsonFiles[0], filepath.Join(restored.Data, "json", filepath.Base(jsonFiles[0])))
	doc := restored.export(t)
	if n := len(messagesOf(doc, key.String())); int64(n) < 2*before {
		t.Errorf("restored: %d messages of %s, want at least %d", n, key, 2*before)
	}
	if n := len(messagesOf(doc, jsonKey.String())); n != 2 {
		t.Errorf("restored: %d messages of the JSON owner, want 2", n)
	}
}

func backupExchange(key pipeline.Key, i int) []memory.Message {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	id := fmt.Sprint(i)
	return []memory.Message{
		{Key: key, Role: memory.RoleUser, SenderID: key.Chat, PlatformID: id, Text: "message " + id + " " + strings.Repeat("words ", 20), Time: at},
		{Key: key, Role: memory.RoleAssistant, ReplyTo: id, Text: "reply " + id, Time: at.Add(time.Millisecond)},
	}
}

func copyForTest(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBackupUsage(t *testing.T) {
	env := newEnv(t, "")
	if r := env.run(t, "", "backup"); r.Code != 2 || !strings.Contains(r.Stderr, "usage: bot backup FILE") {
		t.Errorf("bot backup without FILE:\n%s", r)
	}
	r := env.run(t, "", "backup", filepath.Join(t.TempDir(), "x.db"))
	if r.Code != 1 || !strings.Contains(r.Stderr, "no database to back up") {
		t.Errorf("bot backup without a database:\n%s", r)
	}
	if _, err := os.Stat(env.Data); err == nil {
		t.Errorf("bot backup created the data dir")
	}
}

// On PostgreSQL, bot backup says how to back the database up (pg_dump),
// without printing its password, instead of failing for want of recall.db.
func TestBackupOnPostgresNamesPgDump(t *testing.T) {
	env := newEnv(t, "", "RECALL_DATABASE_URL=postgres://recall:s3cret@db.example:5432/recall")
	r := env.run(t, "", "backup", filepath.Join(t.TempDir(), "x.db"))
	if r.Code != 0 || !strings.Contains(r.Stdout, "pg_dump --format=custom") || !strings.Contains(r.Stdout, "postgres://recall:PASSWORD@db.example:5432/recall") {
		t.Errorf("bot backup on PostgreSQL:\n%s", r)
	}
	if strings.Contains(r.Stdout+r.Stderr, "s3cret") {
		t.Errorf("the password was printed:\n%s", r)
	}
}

// The documented example (docs/operations.md), `bot backup backups/recall-DATE.db`, works on a first
// run: the missing directory is made (0700), relative to the working
// directory, and holds the copy.
func TestBackupMakesItsDirectory(t *testing.T) {
	ctx := t.Context()
	env := newEnv(t, "")
	s, err := memory.Open(ctx, memory.Options{Dir: env.Data})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, backupExchange(pipeline.Key{Channel: "telegram", Chat: "42"}, 1)...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := env.mustRun(t, "", "backup", filepath.Join("backups", "recall-2026-06-01.db"))
	dir := filepath.Join(env.Dir, "backups")
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatalf("no backups/ directory after bot backup: %v\n%s", err, r)
	}
	if perm := st.Mode().Perm(); perm != 0o700 {
		t.Errorf("backups/ is %o, want 700", perm)
	}
	if _, err := os.Stat(filepath.Join(dir, "recall-2026-06-01.db")); err != nil {
		t.Errorf("the backup is not in backups/: %v\n%s", err, r)
	}
}
