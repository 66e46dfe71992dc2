// Package pgdb owns Recall's connections to PostgreSQL (database.url): the
// wire protocol spoken over pgx's message codec (pgx/v5/pgproto3), a pool
// of connections, prepared statements per connection, batches sent in one
// round trip, transactions, LISTEN, and a database/sql driver for the
// WhatsApp session store.
//
// Why not pgx itself: pgx, and its connection layer pgconn, link every
// PostgreSQL type's codec (pgx/v5/pgtype) whether used or not, which
// weighed ~3.5 MB of the binary. The statements Recall runs use a handful
// of types; this package encodes arguments and decodes columns for those
// (see values.go), the way pgx did: a statement with arguments is prepared
// once per connection (its parameter and column types described), then
// runs in one round trip.
package pgdb

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Config says where and how to connect.
type Config struct {
	Host     string // a host name or address, or a Unix socket's directory (starts with /)
	Port     uint16
	User     string
	Password string
	Database string
	// SSLMode is libpq's: disable, allow or prefer (the default; both take
	// TLS when the server offers it, the certificate not checked), require
	// (TLS, the certificate not checked unless SSLRootCert is set, then as
	// verify-ca), verify-ca (TLS, the certificate signed by a CA of
	// SSLRootCert, or of the system when it is not set or is "system") or
	// verify-full (verify-ca, and the certificate is for Host).
	SSLMode     string
	SSLRootCert string
	// ChannelBinding is libpq's channel_binding: prefer (the default:
	// SCRAM-SHA-256-PLUS, bound to the server's TLS certificate, when the
	// server offers it), require (only that: refuses a server that
	// authenticates any other way) or disable.
	ChannelBinding string
	// ConnectTimeout bounds dialling and the start-up exchange (0: none).
	ConnectTimeout time.Duration
	// RuntimeParams are sent at start-up (application_name, search_path, …).
	RuntimeParams map[string]string
	// DialFunc opens the network connection.
	DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxConns bounds a pool's connections (pool_max_conns in the URL;
	// default max(4, CPUs), as pgx's pool).
	MaxConns int
}

// Copy returns a copy that can be changed without changing c.
func (c *Config) Copy() *Config {
	n := *c
	n.RuntimeParams = make(map[string]string, len(c.RuntimeParams))
	for k, v := range c.RuntimeParams {
		n.RuntimeParams[k] = v
	}
	return &n
}

// ParseConfig reads a postgres:// URL or a key=value connection string, as
// libpq and pgx do, with libpq's environment variables (PGHOST, PGPORT,
// PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, PGSSLROOTCERT,
// PGCHANNELBINDING, PGAPPNAME, PGCONNECT_TIMEOUT)
// for what it leaves out. A parameter it does not know is a PostgreSQL
// run-time parameter (search_path, …); pool parameters other than
// pool_max_conns are accepted and ignored.
func ParseConfig(connString string) (*Config, error) {
	settings := map[string]string{}
	for env, key := range map[string]string{"PGHOST": "host", "PGPORT": "port", "PGUSER": "user", "PGPASSWORD": "password",
		"PGDATABASE": "dbname", "PGSSLMODE": "sslmode", "PGSSLROOTCERT": "sslrootcert", "PGCHANNELBINDING": "channel_binding", "PGAPPNAME": "application_name",
		"PGCONNECT_TIMEOUT": "connect_timeout"} {
		if v := os.Getenv(env); v != "" {
			settings[key] = v
		}
	}
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		if err := parseURL(connString, settings); err != nil {
			return nil, err
		}
	} else if err := parseKeyValue(connString, settings); err != nil {
		return nil, err
	}
	cfg := &Config{RuntimeParams: map[string]string{}, Port: 5432, SSLMode: "prefer", ChannelBinding: "prefer", MaxConns: max(4, runtime.NumCPU())}
	var d net.Dialer
	d.KeepAlive = 5 * time.Minute
	cfg.DialFunc = d.DialContext
	for k, v := range settings {
		switch k {
		case "host":
			cfg.Host = v
		case "port":
			p, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("port %q is not a port number", v)
			}
			cfg.Port = uint16(p)
		case "user":
			cfg.User = v
		case "password":
			cfg.Password = v
		case "dbname":
			cfg.Database = v
		case "sslmode":
			switch v {
			case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
				cfg.SSLMode = v
			default:
				return nil, fmt.Errorf("sslmode %q is not one of disable, allow, prefer, require, verify-ca, verify-full", v)
			}
		case "sslrootcert":
			cfg.SSLRootCert = v
		case "channel_binding":
			switch v {
			case "disable", "prefer", "require":
				cfg.ChannelBinding = v
			default:
				return nil, fmt.Errorf("channel_binding %q is not one of disable, prefer, require", v)
			}
		case "connect_timeout":
			s, err := strconv.Atoi(v)
			if err != nil || s < 0 {
				return nil, fmt.Errorf("connect_timeout %q is not a number of seconds", v)
			}
			cfg.ConnectTimeout = time.Duration(s) * time.Second
		case "pool_max_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("pool_max_conns %q is not a number of connections", v)
			}
			cfg.MaxConns = n
		case "sslcert", "sslkey", "sslpassword", "sslsni", "target_session_attrs", "service", "servicefile", "passfile":
			// libpq's, not supported: the connection goes without them
		default:
			if !strings.HasPrefix(k, "pool_") {
				cfg.RuntimeParams[k] = v
			}
		}
	}
	if cfg.Host == "" {
		cfg.Host = defaultHost()
	}
	if cfg.User == "" {
		if u, err := user.Current(); err == nil {
			cfg.User = u.Username
		}
	}
	if cfg.Database == "" {
		cfg.Database = cfg.User
	}
	return cfg, nil
}

// defaultHost is libpq's: the Unix socket when the server's directory is
// there, else localhost.
func defaultHost() string {
	for _, dir := range []string{"/var/run/postgresql", "/tmp"} {
		if _, err := os.Stat(dir + "/.s.PGSQL.5432"); err == nil {
			return dir
		}
	}
	return "localhost"
}

func parseURL(s string, settings map[string]string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("reading the database URL: %w", err)
	}
	if u.User != nil {
		settings["user"] = u.User.Username()
		if p, ok := u.User.Password(); ok {
			settings["password"] = p
		}
	}
	host, port := u.Host, ""
	if h, p, err := net.SplitHostPort(u.Host); err == nil {
		host, port = h, p
	}
	if strings.Contains(host, ",") {
		return fmt.Errorf("several hosts in the database URL are not supported")
	}
	if host != "" {
		settings["host"] = host
	}
	if port != "" {
		settings["port"] = port
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		settings["dbname"] = db
	}
	for k, vs := range u.Query() {
		if len(vs) > 0 {
			settings[k] = vs[len(vs)-1]
		}
	}
	return nil
}

// parseKeyValue reads host=… port=… with values optionally in single
// quotes (backslash escapes within).
func parseKeyValue(s string, settings map[string]string) error {
	for {
		s = strings.TrimLeft(s, " \t\n\r")
		if s == "" {
			return nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return fmt.Errorf("connection string: %q is not key=value", s)
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val strings.Builder
		if strings.HasPrefix(s, "'") {
			i := 1
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
			}
			if i >= len(s) {
				return fmt.Errorf("connection string: unterminated quote in %s", key)
			}
			s = s[i+1:]
		} else {
			i := 0
			for ; i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
			}
			s = s[i:]
		}
		if key == "database" {
			key = "dbname"
		}
		settings[key] = val.String()
	}
}
