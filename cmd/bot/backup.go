package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/memory"
)

// runBackup writes a consistent copy of recall.db to a new file while the
// bot may be running (VACUUM INTO reads one snapshot; writers go on), and
// copies the JSON-backend files to FILE.json.d/. It never overwrites: FILE
// and FILE.json.d must not exist; FILE's directory is created if missing.
func runBackup(ctx context.Context, cfg config.Config, args []string, stdout io.Writer) (err error) {
	const usage = "usage: bot backup FILE (a new file; the JSON-storage files, if any, go to FILE.json.d/)"
	if len(args) != 1 || args[0] == "" || strings.HasPrefix(args[0], "-") {
		return usageError(usage)
	}
	dst, err := filepath.Abs(args[0])
	if err != nil {
		return err
	}
	src := filepath.Join(cfg.Data.Dir, memory.DatabaseFile)
	if cfg.Database.URL != "" {
		// The conversations are in PostgreSQL: its own tool backs them up.
		fmt.Fprintf(stdout, "Your conversations are in PostgreSQL (database.url), which bot backup does not copy: back it up with\n"+
			"  pg_dump --format=custom --file=recall.dump '%s'\n"+
			"and restore with pg_restore --clean --dbname=URL recall.dump (replicas stopped).\n", redactURL(cfg.Database.URL))
		if memory.StoreExists(cfg.Data.Dir) != nil {
			return nil // nothing local to copy
		}
	}
	if err := memory.StoreExists(cfg.Data.Dir); err != nil {
		return fmt.Errorf("no database to back up: %w", err)
	}
	jsonDst := dst + ".json.d"
	for _, p := range []string{dst, jsonDst} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: refusing to overwrite it (back up to a new name)", p)
		}
	}
	// The backup's directory is made (0700) when missing, so the documented
	// `bot backup backups/recall-$(date +%F).db` works on a first run.
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("creating the backup's directory: %w", err)
	}
	// Create the file first, empty and 0600 (VACUUM INTO accepts an empty
	// file), so the copy is never readable by others.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating the backup: %w", err)
	}
	f.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(dst)
			os.RemoveAll(jsonDst)
		}
	}()

	db, err := memory.OpenSQLite(ctx, src)
	if err != nil {
		return err
	}
	_, err = db.DB().ExecContext(ctx, `VACUUM INTO ?`, dst)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if err := os.Chmod(dst, 0o600); err != nil {
		return err
	}
	st, err := os.Stat(dst)
	if err != nil {
		return err
	}
	files, err := copyJSONFiles(filepath.Join(cfg.Data.Dir, "json"), jsonDst)
	if err != nil {
		return fmt.Errorf("copying the JSON storage: %w", err)
	}
	done = true
	out := map[string]any{"backup": dst, "bytes": st.Size(), "json_files": files}
	if files > 0 {
		out["json_dir"] = jsonDst
	}
	return json.NewEncoder(stdout).Encode(out)
}

// copyJSONFiles copies the *.json files of dir (the JSON backend; each is
// replaced atomically when written, so each copy is whole) into a new
// directory dst, 0700 with 0600 files. No files: no directory.
func copyJSONFiles(dir, dst string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".json" {
			continue
		}
		if n == 0 {
			if err := os.Mkdir(dst, 0o700); err != nil {
				return 0, err
			}
		}
		copied, err := copyFile(filepath.Join(dir, e.Name()), filepath.Join(dst, e.Name()))
		if err != nil {
			return n, err
		}
		if copied {
			n++
		}
	}
	return n, nil
}

// copyFile copies src to a new file dst (0600); false when src is gone
// (purged or moved since the listing).
func copyFile(src, dst string) (bool, error) {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	return true, errors.Join(err, out.Close())
}

// redactURL is a database URL without its password.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "PASSWORD")
	}
	return u.String()
}
