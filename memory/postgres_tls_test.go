package memory

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/recallbot/recall/memory/pgtest"
)

// TLS and passwords as a user's database.url asks for them, against a real
// server of the test's own (pgtest.Start) with a certificate made at test
// time, through OpenPostgres: every sslmode, SCRAM with and without channel
// binding, MD5, client certificates, and what pgx reads besides the URL
// (several hosts, passfile, service, ~/.postgresql/root.crt).

// tlsCluster is a PostgreSQL server that speaks TLS with a certificate for
// "localhost" (not for 127.0.0.1) signed by a CA of the test's own
// (caFile). TLS is required (hostssl) for every role but "plain", which
// may only connect without it ("hostnossl"); "scram" and "nonascii" sign
// in with SCRAM-SHA-256, "md5user" with MD5, "certuser" with a client
// certificate signed by the same CA (certFile, keyFile), "postgres"
// without a password. The roles are superusers: OpenPostgres checks the
// migrations (applied once, at start) whoever connects.
type tlsCluster struct {
	*pgtest.Cluster
	caFile            string
	otherCAFile       string // a CA that did not sign the server's certificate
	certFile, keyFile string // certuser's client certificate
	home              string // $HOME of the test: no ~/.postgresql, ~/.pgpass
}

func startTLSCluster(t *testing.T) *tlsCluster {
	if testing.Short() {
		t.Skip("-short: starts a PostgreSQL cluster of its own (10–20 s on a busy 2-core machine); go test without -short runs it")
	}
	t.Helper()
	ca, caKey, caPEM := newCA(t, "Recall test CA")
	_, _, otherPEM := newCA(t, "Some other CA")
	serverPEM, serverKey := newCert(t, ca, caKey, "localhost", []string{"localhost"}, x509.ExtKeyUsageServerAuth)
	clientPEM, clientKey := newCert(t, ca, caKey, "certuser", nil, x509.ExtKeyUsageClientAuth)
	c := pgtest.Start(t, pgtest.ClusterOptions{
		Conf: []string{"ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'", "ssl_ca_file = 'root.crt'",
			"password_encryption = 'scram-sha-256'"},
		HBA: strings.Join([]string{
			"local all all trust",
			"hostnossl all plain 127.0.0.1/32 trust",
			"hostssl all postgres 127.0.0.1/32 trust",
			"hostssl all scram 127.0.0.1/32 scram-sha-256",
			"hostssl all nonascii 127.0.0.1/32 scram-sha-256",
			"hostssl all md5user 127.0.0.1/32 md5",
			"hostssl all certuser 127.0.0.1/32 cert",
		}, "\n") + "\n",
		Files: map[string][]byte{"server.crt": serverPEM, "server.key": serverKey, "root.crt": caPEM},
	})
	dir := t.TempDir()
	tc := &tlsCluster{Cluster: c, caFile: filepath.Join(dir, "ca.crt"), otherCAFile: filepath.Join(dir, "other.crt"),
		certFile: filepath.Join(dir, "certuser.crt"), keyFile: filepath.Join(dir, "certuser.key"), home: t.TempDir()}
	for name, b := range map[string][]byte{tc.caFile: caPEM, tc.otherCAFile: otherPEM, tc.certFile: clientPEM, tc.keyFile: clientKey} {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// What pgx reads from the home directory is the test's to set.
	t.Setenv("HOME", tc.home)
	for _, v := range []string{"PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGSSLMODE", "PGSSLROOTCERT", "PGSERVICE", "PGPASSFILE", "PGCHANNELBINDING"} {
		t.Setenv(v, "")
	}
	tc.admin(t,
		`CREATE ROLE plain LOGIN SUPERUSER`,
		`CREATE ROLE scram LOGIN SUPERUSER PASSWORD 's3cret'`,
		`CREATE ROLE nonascii LOGIN SUPERUSER`,
		`CREATE ROLE certuser LOGIN SUPERUSER`,
		`SET password_encryption = 'md5'`,
		`CREATE ROLE md5user LOGIN SUPERUSER PASSWORD 'md5 secret'`)
	p, err := OpenPostgres(context.Background(), tc.socket("postgres"))
	if err != nil {
		t.Fatalf("migrating the TLS cluster: %v", err)
	}
	_ = p.Close()
	return tc
}

// socket is a connection string to the cluster through its Unix socket.
func (c *tlsCluster) socket(user string) string {
	return "host=" + c.Dir + " port=" + strconv.Itoa(c.Port) + " user=" + user + " dbname=postgres sslmode=disable"
}

// admin runs statements as postgres through the Unix socket.
func (c *tlsCluster) admin(t *testing.T, stmts ...string) {
	t.Helper()
	p, err := OpenPostgres(context.Background(), c.socket("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, s := range stmts {
		if _, err := p.pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// open opens the store as connString says (host, user, sslmode, …) on the
// cluster's port (unless connString names one) within 10 seconds, and
// checks it answers.
func (c *tlsCluster) open(t *testing.T, connString string) (*Postgres, error) {
	t.Helper()
	if !strings.Contains(connString, "port=") {
		connString += " port=" + strconv.Itoa(c.Port)
	}
	p, err := OpenPostgres(context.Background(), connString+" dbname=postgres connect_timeout=10")
	if err == nil {
		t.Cleanup(func() { _ = p.Close() })
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: connecting hung until the timeout: %v", connString, err)
	}
	return p, err
}

// session is what the server says of a session of p: encrypted or not,
// and as whom.
func session(t *testing.T, p *Postgres) (tls bool, user string) {
	t.Helper()
	if err := p.pool.QueryRow(context.Background(), `SELECT ssl, current_user FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&tls, &user); err != nil {
		t.Fatal(err)
	}
	return tls, user
}

// refused checks that connString is refused with an error that says each
// of says.
func (c *tlsCluster) refused(t *testing.T, connString string, says ...string) {
	t.Helper()
	_, err := c.open(t, connString)
	if err == nil {
		t.Fatalf("%s: connected", connString)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: the error does not say %q: %v", connString, s, err)
		}
	}
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// certSerial numbers the certificates the tests make (the CAs are 1).
var certSerial atomic.Int64

// newCert makes a certificate for cn (and dns) signed by ca, and its key,
// both PEM-encoded.
func newCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, dns []string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(certSerial.Add(1) + 1),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dns,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// Each sslmode against a server with TLS, as a user sees it: connected and
// encrypted, or refused with an error that says why (never a hang); and
// what pgx reads beside the URL: a client certificate, ~/.postgresql/
// root.crt, several hosts, a passfile, a service file.
func TestPostgresTLSModes(t *testing.T) {
	c := startTLSCluster(t)
	port := strconv.Itoa(c.Port)
	connects := []struct {
		name, conn string
		tls        bool
		user       string
	}{
		{"require encrypts without checking the certificate", "host=127.0.0.1 user=postgres sslmode=require", true, "postgres"},
		{"verify-full with the CA and the certificate's name", "host=localhost user=postgres sslmode=verify-full sslrootcert=" + c.caFile, true, "postgres"},
		{"verify-ca with the CA checks the issuer, not the name", "host=127.0.0.1 user=postgres sslmode=verify-ca sslrootcert=" + c.caFile, true, "postgres"},
		{"require with sslrootcert checks the issuer as verify-ca", "host=127.0.0.1 user=postgres sslmode=require sslrootcert=" + c.caFile, true, "postgres"},
		{"prefer takes the TLS the server offers", "host=localhost user=postgres sslmode=prefer", true, "postgres"},
		{"prefer is the default", "host=localhost user=postgres", true, "postgres"},
		{"allow takes TLS when the server wants it", "host=localhost user=postgres sslmode=allow", true, "postgres"},
		{"disable does not encrypt", "host=localhost user=plain sslmode=disable", false, "plain"},
		{"a client certificate signs in", "host=localhost user=certuser sslmode=verify-full sslrootcert=" + c.caFile + " sslcert=" + c.certFile + " sslkey=" + c.keyFile, true, "certuser"},
		{"several hosts: the first that answers", "host=127.0.0.1,localhost port=1," + port + " user=postgres sslmode=require", true, "postgres"},
	}
	for _, tc := range connects {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.open(t, tc.conn)
			if err != nil {
				t.Fatalf("%s: %v", tc.conn, err)
			}
			if encrypted, user := session(t, p); encrypted != tc.tls || user != tc.user {
				t.Fatalf("%s: encrypted %v as %s, want %v as %s", tc.conn, encrypted, user, tc.tls, tc.user)
			}
		})
	}
	t.Run("~/.postgresql/root.crt is the CA verify-full trusts when sslrootcert is not set", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(c.home, ".postgresql"), 0o700); err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(c.home, ".postgresql", "root.crt")
		ca, err := os.ReadFile(c.caFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root, ca, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(root)
		p, err := c.open(t, "host=localhost user=postgres sslmode=verify-full")
		if err != nil {
			t.Fatal(err)
		}
		if encrypted, _ := session(t, p); !encrypted {
			t.Fatal("not encrypted")
		}
	})
	t.Run("a passfile gives the password", func(t *testing.T) {
		pass := filepath.Join(t.TempDir(), "pgpass")
		if err := os.WriteFile(pass, []byte("localhost:"+port+":*:scram:s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := c.open(t, "host=localhost user=scram sslmode=require passfile="+pass); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a service names the server and the user", func(t *testing.T) {
		svc := filepath.Join(t.TempDir(), "pg_service.conf")
		conf := "[recall]\nhost=localhost\nport=" + port + "\ndbname=postgres\nuser=scram\npassword=s3cret\nsslmode=verify-full\nsslrootcert=" + c.caFile + "\n"
		if err := os.WriteFile(svc, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := OpenPostgres(context.Background(), "service=recall servicefile="+svc+" connect_timeout=10")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if encrypted, user := session(t, p); !encrypted || user != "scram" {
			t.Fatalf("encrypted %v as %s, want TLS as scram", encrypted, user)
		}
	})

	refused := []struct {
		name, conn string
		says       []string // in the error, each
	}{
		{"verify-full refuses a certificate for another name", "host=127.0.0.1 user=postgres sslmode=verify-full sslrootcert=" + c.caFile,
			[]string{"certificate", "127.0.0.1"}},
		{"verify-full refuses a certificate no CA it knows signed", "host=localhost user=postgres sslmode=verify-full",
			[]string{"certificate signed by unknown authority"}},
		{"verify-ca refuses a certificate the given CA did not sign", "host=localhost user=postgres sslmode=verify-ca sslrootcert=" + c.otherCAFile,
			[]string{"certificate"}},
		{"require with sslrootcert refuses a certificate that CA did not sign", "host=127.0.0.1 user=postgres sslmode=require sslrootcert=" + c.otherCAFile,
			[]string{"certificate"}},
		{"a server requiring TLS refuses disable with its own message", "host=localhost user=postgres sslmode=disable",
			[]string{"no pg_hba.conf entry", "no encryption", "28000"}},
		{"a role allowed only without TLS is refused with require", "host=localhost user=plain sslmode=require",
			[]string{"no pg_hba.conf entry", "28000"}},
		{"a missing sslrootcert file is named", "host=localhost user=postgres sslmode=verify-full sslrootcert=/nonexistent/root.crt",
			[]string{"/nonexistent/root.crt"}},
		{"a role signing in by certificate without one", "host=localhost user=certuser sslmode=verify-full sslrootcert=" + c.caFile,
			[]string{"certificate", "28000"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) { c.refused(t, tc.conn, tc.says...) })
	}
}

// Passwords over TLS: SCRAM-SHA-256 (with channel binding to the server's
// certificate, SCRAM-SHA-256-PLUS, which a TLS server offers, or without),
// and MD5.
func TestPostgresTLSPasswords(t *testing.T) {
	c := startTLSCluster(t)
	for _, tc := range []struct{ name, conn string }{
		{"SCRAM, channel binding when offered (the default)", "host=localhost user=scram password=s3cret sslmode=require"},
		{"SCRAM with channel binding required", "host=localhost user=scram password=s3cret sslmode=verify-full sslrootcert=" + c.caFile + " channel_binding=require"},
		{"SCRAM without channel binding", "host=localhost user=scram password=s3cret sslmode=require channel_binding=disable"},
		{"MD5", "host=localhost user=md5user password='md5 secret' sslmode=require"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.open(t, tc.conn)
			if err != nil {
				t.Fatalf("%s: %v", tc.conn, err)
			}
			if encrypted, _ := session(t, p); !encrypted {
				t.Fatalf("%s: not encrypted", tc.conn)
			}
		})
	}
	for _, tc := range []struct {
		name, conn string
		says       []string
	}{
		{"a wrong SCRAM password", "host=localhost user=scram password=wrong sslmode=require",
			[]string{`password authentication failed for user "scram"`, "28P01"}},
		{"a wrong MD5 password", "host=localhost user=md5user password=wrong sslmode=require",
			[]string{`password authentication failed for user "md5user"`, "28P01"}},
		{"channel binding required without TLS", "host=localhost user=plain sslmode=disable channel_binding=require",
			[]string{"channel binding"}},
		{"channel binding required, the server asks no password", "host=localhost user=postgres sslmode=require channel_binding=require",
			[]string{"channel binding"}},
	} {
		t.Run(tc.name, func(t *testing.T) { c.refused(t, tc.conn, tc.says...) })
	}
}

// A password that is not ASCII signs in with SCRAM when given the way it
// was set (ALTER ROLE … PASSWORD): the server prepares it with SASLprep
// (RFC 4013: spaces mapped, some characters removed, NFKC), pgx with PRECIS
// OpaqueString (RFC 8265: spaces mapped, NFC), which agree on these.
func TestPostgresSCRAMNonASCIIPasswords(t *testing.T) {
	c := startTLSCluster(t)
	for _, tc := range []struct{ name, set, given string }{
		{"composed accents (NFC)", "pässwörd", "pässwörd"},
		{"decomposed accents (NFD) as some keyboards type them", "pässwörd", "pa\u0308sswo\u0308rd"},
		{"a no-break space", "correct\u00a0horse", "correct\u00a0horse"},
		{"a character SASLprep prohibits (the password is used as is)", "pä\u00a0ss\ue000", "pä\u00a0ss\ue000"},
		{"Cyrillic", "пароль", "пароль"},
		{"decomposed Hangul", "\u1100\u1161\u11a8", "\u1100\u1161\u11a8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.admin(t, `ALTER ROLE nonascii PASSWORD '`+strings.ReplaceAll(tc.set, "'", "''")+`'`)
			if _, err := c.open(t, nonASCIIConn(tc.given)); err != nil {
				t.Fatalf("password %q set, %q given: %v", tc.set, tc.given, err)
			}
		})
	}
	c.admin(t, `ALTER ROLE nonascii PASSWORD 'pässwörd'`)
	if _, err := c.open(t, nonASCIIConn("passwort")); err == nil {
		t.Fatal("a different password was accepted")
	}
	// Where PRECIS and SASLprep differ, pgx v5.12 sends another password
	// than the server expects (DEVELOPERS.md says so): NFKC-only changes,
	// a soft hyphen (SASLprep maps it to nothing, PRECIS refuses it and pgx
	// sends it as is) and mixed directions (SASLprep refuses them and the
	// server uses the password as is, PRECIS maps the space).
	for _, pw := range []string{"ｐässwort", "\ufb01le-pässwort", "pass\u00adwört", "שלום\u00a0abc"} {
		c.admin(t, `ALTER ROLE nonascii PASSWORD '`+pw+`'`)
		if _, err := c.open(t, nonASCIIConn(pw)); err == nil {
			t.Errorf("pgx now signs in with %q: move it to the cases above and correct DEVELOPERS.md", pw)
		}
	}
}

// nonASCIIConn signs in as nonascii over TLS with password pw.
func nonASCIIConn(pw string) string {
	return "host=localhost user=nonascii sslmode=require password='" + strings.ReplaceAll(pw, "'", `\'`) + "'"
}

// The first SCRAM message says whether we bind to the TLS channel (RFC 5802
// section 6): "p=tls-server-end-point" when the server offers
// SCRAM-SHA-256-PLUS; "y" over TLS when it does not (so that a server that
// did, and had the offer stripped on the way, refuses); "n" when binding is
// disabled. A server of our own over TLS records what it receives.
func TestPostgresSCRAMChannelBindingFlag(t *testing.T) {
	for _, tc := range []struct {
		name, binding string
		offered       []string
		wantMech, gs2 string
	}{
		{"offered", "prefer", []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}, "SCRAM-SHA-256-PLUS", "p=tls-server-end-point,,"},
		{"not offered over TLS", "prefer", []string{"SCRAM-SHA-256"}, "SCRAM-SHA-256", "y,,"},
		{"disabled", "disable", []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"}, "SCRAM-SHA-256", "n,,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan *pgproto3.SASLInitialResponse, 1)
			addr := fakeTLSServer(t, tc.offered, got)
			p, err := OpenPostgres(context.Background(), "postgres://u:pw@"+addr+"/db?sslmode=require&connect_timeout=10&channel_binding="+tc.binding)
			if err == nil {
				_ = p.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "fake server") {
				t.Fatalf("want the fake server's refusal, got %v", err)
			}
			m := <-got
			if m.AuthMechanism != tc.wantMech || !strings.HasPrefix(string(m.Data), tc.gs2+"n=,r=") {
				t.Fatalf("sent %s %q, want %s %q…", m.AuthMechanism, m.Data, tc.wantMech, tc.gs2)
			}
		})
	}
}

// fakeTLSServer accepts one connection on 127.0.0.1, starts TLS, asks for
// SASL with the mechanisms offered, sends what the client answers on got
// and refuses it. Connections after the first (pgx tries again without
// TLS under sslmode=prefer; not under require) are closed at once.
func fakeTLSServer(t *testing.T, offered []string, got chan<- *pgproto3.SASLInitialResponse) string {
	t.Helper()
	cert, key, _ := newCA(t, "fake server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = l.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if m, err := pgproto3.NewBackend(nc, nc).ReceiveStartupMessage(); err != nil {
			t.Errorf("fake server: %v", err)
			return
		} else if _, ok := m.(*pgproto3.SSLRequest); !ok {
			t.Errorf("fake server: %T before TLS", m)
			return
		}
		if _, err := nc.Write([]byte{'S'}); err != nil {
			return
		}
		tc := tls.Server(nc, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key}}})
		be := pgproto3.NewBackend(tc, tc)
		if _, err := be.ReceiveStartupMessage(); err != nil {
			t.Errorf("fake server: %v", err)
			return
		}
		be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: offered})
		if err := be.Flush(); err != nil {
			return
		}
		_ = be.SetAuthType(pgproto3.AuthTypeSASL)
		m, err := be.Receive()
		if err != nil {
			t.Errorf("fake server: %v", err)
			return
		}
		r, _ := m.(*pgproto3.SASLInitialResponse)
		if r == nil {
			t.Errorf("fake server: %T, not SASLInitialResponse", m)
			return
		}
		got <- r
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28000", Message: "fake server: refused"})
		_ = be.Flush()
	}()
	return l.Addr().String()
}
