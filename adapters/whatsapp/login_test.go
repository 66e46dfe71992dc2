package whatsapp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waAdv"
	"go.mau.fi/whatsmeow/socket"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"

	"github.com/recallbot/recall/pipeline"
)

// fakeLinker plays WhatsApp's side of linking: the QR channel's items, in
// order, then the channel is closed.
type fakeLinker struct {
	items      []whatsmeow.QRChannelItem
	connectErr error
	pairCode   string
	pairErr    error

	handler      whatsmeow.EventHandler
	paired       []string
	connected    bool
	disconnected bool
}

func (f *fakeLinker) GetQRChannel(context.Context) (<-chan whatsmeow.QRChannelItem, error) {
	ch := make(chan whatsmeow.QRChannelItem, len(f.items))
	for _, it := range f.items {
		ch <- it
	}
	close(ch)
	return ch, nil
}

func (f *fakeLinker) AddEventHandler(h whatsmeow.EventHandler) uint32 {
	f.handler = h
	return 1
}

func (f *fakeLinker) Connect() error {
	if f.connectErr != nil {
		return f.connectErr
	}
	f.connected = true
	if f.handler != nil {
		f.handler(&events.Connected{})
	}
	return nil
}

func (f *fakeLinker) Disconnect() { f.disconnected = true }

func (f *fakeLinker) PairPhone(_ context.Context, phone string, _ bool, _ whatsmeow.PairClientType, _ string) (string, error) {
	f.paired = append(f.paired, phone)
	return f.pairCode, f.pairErr
}

func qrCode(s string) whatsmeow.QRChannelItem {
	return whatsmeow.QRChannelItem{Event: whatsmeow.QRChannelEventCode, Code: s, Timeout: 20 * time.Second}
}

func TestLoginQR(t *testing.T) {
	f := &fakeLinker{items: []whatsmeow.QRChannelItem{qrCode("2@first"), qrCode("2@second"), whatsmeow.QRChannelSuccess}}
	var out bytes.Buffer
	if err := link(context.Background(), f, &out, ""); err != nil {
		t.Fatalf("link: %v", err)
	}
	s := out.String()
	if n := strings.Count(s, LinkHint); n < 2 {
		t.Errorf("the hint appears %d times:\n%s", n, s)
	}
	if !strings.Contains(s, "Settings → Linked devices → Link a device") {
		t.Error("no path to Linked devices")
	}
	// Two QR codes in half blocks (the quiet zone is a full-block row).
	if n := strings.Count(s, strings.Repeat("█", 20)); n < 2 {
		t.Errorf("found %d QR codes:\n%s", n, s)
	}
	if len(f.paired) != 0 {
		t.Error("asked for a pairing code without a phone")
	}
	if !f.disconnected {
		t.Error("the login connection was left open")
	}
}

func TestLoginPairingCode(t *testing.T) {
	f := &fakeLinker{pairCode: "ABCD-EFGH", items: []whatsmeow.QRChannelItem{qrCode("2@a"), qrCode("2@b"), whatsmeow.QRChannelSuccess}}
	var out bytes.Buffer
	if err := link(context.Background(), f, &out, "+49 151 12345678"); err != nil {
		t.Fatalf("link: %v", err)
	}
	s := out.String()
	if !strings.Contains(s, "Your pairing code: ABCD-EFGH") || !strings.Contains(s, "Link with phone number instead") {
		t.Errorf("output:\n%s", s)
	}
	if strings.Contains(s, "█") {
		t.Error("printed a QR code in pairing-code mode")
	}
	if len(f.paired) != 1 || f.paired[0] != "+49 151 12345678" {
		t.Errorf("PairPhone calls: %q", f.paired)
	}
}

func TestLoginFailures(t *testing.T) {
	tests := []struct {
		name  string
		f     *fakeLinker
		phone string
		want  string
		is    error
	}{
		{name: "timeout", f: &fakeLinker{items: []whatsmeow.QRChannelItem{qrCode("2@a"), whatsmeow.QRChannelTimeout}}, want: "no code was used in time"},
		{name: "connection lost before a code", f: &fakeLinker{items: []whatsmeow.QRChannelItem{whatsmeow.QRChannelTimeout}}, want: "closed before a code came; check the network"},
		{name: "outdated on the channel", f: &fakeLinker{items: []whatsmeow.QRChannelItem{whatsmeow.QRChannelClientOutdated}}, is: errLoginOutdated},
		{name: "outdated at connect", f: &fakeLinker{connectErr: socket.ErrWithStatusCode{StatusCode: 405}}, is: errLoginOutdated},
		{name: "connect fails", f: &fakeLinker{connectErr: errors.New("no network")}, want: "no network"},
		{name: "pair error", f: &fakeLinker{items: []whatsmeow.QRChannelItem{{Event: whatsmeow.QRChannelEventError, Error: errors.New("bad")}}}, want: "linking failed"},
		{name: "channel closed", f: &fakeLinker{items: []whatsmeow.QRChannelItem{qrCode("2@a")}}, want: "without a result"},
		{name: "no multidevice", f: &fakeLinker{items: []whatsmeow.QRChannelItem{whatsmeow.QRChannelScannedWithoutMultidevice}}, want: "multi-device"},
		{
			name: "bad phone", phone: "0151 1234567",
			f:    &fakeLinker{pairErr: whatsmeow.ErrPhoneNumberIsNotInternational, items: []whatsmeow.QRChannelItem{qrCode("2@a")}},
			want: "international format",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := link(context.Background(), tt.f, &bytes.Buffer{}, tt.phone)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// Login on a linked session says so and changes nothing; Logout and Run
// without a session do nothing and need no network.
func TestLoginLogoutLocal(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	opts := Options{DataDir: dir}
	if err := Logout(ctx, opts); err != nil {
		t.Errorf("Logout without a session: %v", err)
	}
	a, err := New(opts, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(ctx); !errors.Is(err, ErrNotLinked) {
		t.Errorf("Run without a session = %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// Store a linked device, as a finished login does.
	c, err := openSession(ctx, Options{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev := c.NewDevice()
	jid := types.NewJID(botPhone, types.DefaultUserServer)
	jid.Device = 12
	dev.ID = &jid
	dev.Account = &waAdv.ADVSignedDeviceIdentity{Details: []byte{1}, AccountSignature: make([]byte, 64), AccountSignatureKey: make([]byte, 32), DeviceSignature: make([]byte, 64)}
	if err := c.PutDevice(ctx, dev); err != nil {
		t.Fatalf("PutDevice: %v", err)
	}
	c.Close()

	var out bytes.Buffer
	if err := Login(ctx, opts, &out, ""); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if want := fmt.Sprintf("already linked (account +%s)", botPhone); !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "bot whatsapp logout") {
		t.Errorf("Login said %q", out.String())
	}
	a, err = New(opts, func(pipeline.Inbound, pipeline.Sender) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.client.HasSession() || a.client.Me().PN != testMe.PN {
		t.Errorf("session not found: %+v", a.client.Me())
	}
	a.Close()
}

// The Docker hint runs the image's entrypoint (/bot) with the subcommand:
// `… recall bot whatsapp login` would run `bot bot whatsapp login`.
func TestDockerHintRunsTheSubcommand(t *testing.T) {
	const want = "docker compose run --rm -it recall whatsapp login"
	if msg := ErrNotLinked.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "recall bot ") {
		t.Errorf("ErrNotLinked = %q, want the hint %q", msg, want)
	}
}
