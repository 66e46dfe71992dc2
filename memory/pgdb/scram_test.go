package pgdb

import "testing"

// The exchange of RFC 7677 section 3 (user "user", password "pencil"):
// the proof sent and the server's signature checked are the RFC's.
func TestSCRAMExchangeOfRFC7677(t *testing.T) {
	s := scramClient{password: "pencil", firstBare: "n=user,r=rOprNGfwEbeRWgbNEkqO"}
	final, err := s.final("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
	if err != nil {
		t.Fatal(err)
	}
	if want := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="; final != want {
		t.Fatalf("client-final-message\n got %s\nwant %s", final, want)
	}
	if err := s.verify("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="); err != nil {
		t.Fatalf("the RFC's server signature was refused: %v", err)
	}
	if err := s.verify("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="); err == nil {
		t.Fatal("a wrong server signature was accepted")
	}
}

// A server nonce that does not extend ours is refused.
func TestSCRAMRefusesAForeignNonce(t *testing.T) {
	s := scramClient{password: "pencil", firstBare: "n=,r=abc"}
	if _, err := s.final("r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"); err == nil {
		t.Fatal("a server nonce not extending the client's was accepted")
	}
}

func TestParseConfig(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGHOST", "")
	c, err := ParseConfig("postgres://bob:s%40cret@db.example:6543/recall?sslmode=require&pool_max_conns=7&search_path=tenant1&application_name=bot")
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "db.example" || c.Port != 6543 || c.User != "bob" || c.Password != "s@cret" || c.Database != "recall" ||
		c.SSLMode != "require" || c.MaxConns != 7 || c.RuntimeParams["search_path"] != "tenant1" || c.RuntimeParams["application_name"] != "bot" {
		t.Fatalf("URL read as %+v", c)
	}
	if _, ok := c.RuntimeParams["pool_max_conns"]; ok {
		t.Fatal("pool_max_conns sent to the server as a run-time parameter")
	}
	c, err = ParseConfig("host=/var/run/postgresql port=5433 user=al password='it\\'s a secret' dbname=x connect_timeout=3")
	if err != nil {
		t.Fatal(err)
	}
	if net, addr := c.address(); c.Password != `it's a secret` || c.User != "al" || c.Database != "x" || c.ConnectTimeout.Seconds() != 3 ||
		net != "unix" || addr != "/var/run/postgresql/.s.PGSQL.5433" {
		t.Fatalf("key=value read as %+v (%s %s)", c, net, addr)
	}
	if _, err := ParseConfig("postgres://h/db?sslmode=sometimes"); err == nil {
		t.Fatal("an unknown sslmode was accepted")
	}
	if _, err := ParseConfig("postgres://h/db?channel_binding=sometimes"); err == nil {
		t.Fatal("an unknown channel_binding was accepted")
	}
	if c, err := ParseConfig("postgres://h/db?channel_binding=require"); err != nil || c.ChannelBinding != "require" || c.RuntimeParams["channel_binding"] != "" {
		t.Fatalf("channel_binding=require read as %+v, %v", c, err)
	}
	if _, err := ParseConfig("postgres://h/db?pool_max_conns=none"); err == nil {
		t.Fatal("a pool_max_conns that is not a number was accepted")
	}
}
