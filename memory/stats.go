package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Stats is what /stats shows the bot's admins.
type Stats struct {
	Owners        int        // chats with any data: a person's private chat, or a group (both backends)
	Senders       int        // distinct people who wrote (channel and sender id; both backends)
	Messages      int64      // stored messages, archived included (both backends)
	MessagesToday int64      // stored since 00:00 UTC
	TokensToday   int64      // LLM tokens used today (UTC), everyone
	TokenUsers    int        // users who used tokens today
	DBBytes       int64      // recall.db
	WALBytes      int64      // recall.db-wal and -shm
	JSONOwners    int        // owners who chose the JSON backend
	JSONBytes     int64      // their files
	Queue         WriteStats // the write-behind queue
	SchemaVersion int
	DataDir       string
	DayStart      time.Time // 00:00 UTC of the day "today" means
}

const (
	sqlCountMessages = `SELECT count(*), coalesce(sum(created_at >= ?), 0) FROM messages`
	sqlSenders       = `SELECT DISTINCT substr(c.key, 1, instr(c.key, ':') - 1), m.sender_id
		FROM messages m JOIN conversations c ON c.id = m.conv WHERE m.role = 'user' AND m.sender_id <> ''`
)

// Stats counts what the bot holds, as of now (today is the UTC day of now).
// It reads every JSON owner's (cached) data, so it costs more than a chat
// turn: it is meant for an admin's occasional /stats.
func (s *Store) Stats(ctx context.Context, now time.Time) (Stats, error) {
	day := now.UTC().Truncate(24 * time.Hour)
	st := Stats{Queue: s.WriteStats(), DataDir: s.opts.Dir, DayStart: day}
	owners, err := s.Owners(ctx)
	if err != nil {
		return st, fmt.Errorf("listing owners: %w", err)
	}
	st.Owners = len(owners)
	senders := map[string]bool{}
	if s.pg != nil {
		if st.Messages, st.MessagesToday, err = s.pg.countMessages(ctx, day, senders); err != nil {
			return st, err
		}
	} else if err := s.sqliteCounts(ctx, day, &st, senders); err != nil {
		return st, err
	}
	jsonOwners, err := s.json.Owners(ctx)
	if err != nil {
		return st, fmt.Errorf("listing JSON owners: %w", err)
	}
	st.JSONOwners = len(jsonOwners)
	for _, o := range jsonOwners {
		d, err := s.json.Export(ctx, o, nil)
		if err != nil {
			return st, fmt.Errorf("reading %s: %w", o, err)
		}
		channel, _, _ := strings.Cut(o, ":")
		for _, c := range d.Conversations {
			for _, m := range c.Messages {
				st.Messages++
				if !m.Time.Before(day) {
					st.MessagesToday++
				}
				if m.Role == RoleUser && m.SenderID != "" {
					senders[channel+":"+m.SenderID] = true
				}
			}
		}
		if fi, err := os.Stat(s.json.Path(o)); err == nil {
			st.JSONBytes += fi.Size()
		}
	}
	st.Senders = len(senders)
	if st.TokensToday, st.TokenUsers, err = s.UsageOn(ctx, now); err != nil {
		return st, err
	}
	if s.pg != nil {
		st.SchemaVersion, err = s.pg.SchemaVersion(ctx)
	} else {
		st.SchemaVersion, err = s.sqlite.SchemaVersion(ctx)
	}
	if err != nil {
		return st, fmt.Errorf("reading the schema version: %w", err)
	}
	path := s.sqlite.Path()
	if fi, err := os.Stat(path); err == nil {
		st.DBBytes = fi.Size()
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(p); err == nil {
			st.WALBytes += fi.Size()
		}
	}
	st.DataDir = filepath.Clean(st.DataDir)
	return st, nil
}

// sqliteCounts counts SQLite's messages (all and since day) into st and
// adds their distinct senders ("channel:id") to senders.
func (s *Store) sqliteCounts(ctx context.Context, day time.Time, st *Stats, senders map[string]bool) error {
	if err := s.sqlite.r.QueryRowContext(ctx, sqlCountMessages, day.UnixMilli()).Scan(&st.Messages, &st.MessagesToday); err != nil {
		return fmt.Errorf("counting messages: %w", err)
	}
	rows, err := s.sqlite.r.QueryContext(ctx, sqlSenders)
	if err != nil {
		return fmt.Errorf("counting senders: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var channel, id string
		if err := rows.Scan(&channel, &id); err != nil {
			return fmt.Errorf("counting senders: %w", err)
		}
		senders[channel+":"+id] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("counting senders: %w", err)
	}
	return nil
}

// countMessages counts the stored messages, those since day, and adds the
// distinct senders ("channel:id") to senders.
func (p *Postgres) countMessages(ctx context.Context, day time.Time, senders map[string]bool) (all, today int64, err error) {
	if err := p.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE created_at >= $1) FROM messages`, day.UnixMilli()).Scan(&all, &today); err != nil {
		return 0, 0, fmt.Errorf("counting messages: %w", err)
	}
	rows, err := p.pool.Query(ctx, `SELECT DISTINCT split_part(c.key, ':', 1), m.sender_id
		FROM messages m JOIN conversations c ON c.id = m.conv WHERE m.role = 'user' AND m.sender_id <> ''`)
	if err != nil {
		return 0, 0, fmt.Errorf("counting senders: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var channel, id string
		if err := rows.Scan(&channel, &id); err != nil {
			return 0, 0, fmt.Errorf("counting senders: %w", err)
		}
		senders[channel+":"+id] = true
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("counting senders: %w", err)
	}
	return all, today, nil
}
