package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mdp/qrterminal/v3"
	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/socket"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types/events"
)

// LinkHint tells the user where WhatsApp scans a QR code.
const LinkHint = "On your phone: WhatsApp → Settings → Linked devices → Link a device, and scan the code."

// pairHint tells the user where WhatsApp takes a pairing code.
const pairHint = "On your phone: WhatsApp → Settings → Linked devices → Link a device → Link with phone number instead, and enter this code."

// deviceName is how the bot appears in the phone's list of linked devices.
const deviceName = "Recall"

// errLoginOutdated is a login refused with 405 "client outdated".
var errLoginOutdated = errors.New("whatsapp: WhatsApp rejects this client version (405 client outdated)")

// Login links a WhatsApp account to the bot and stores the session in
// <DataDir>/whatsapp.db. Without phone it prints QR codes to w (half-block
// characters, readable in a terminal and under `docker run -it`), a new one
// whenever the last expires, until one is scanned or WhatsApp stops
// offering codes (about 2 minutes). With phone (international format,
// "+4915112345678") it prints a pairing code to enter on that phone
// instead. On a 405 "client outdated" answer it updates the client version
// and tries once more. When an account is linked already it says so and
// changes nothing (run Logout first to link another one).
func Login(ctx context.Context, opts Options, w io.Writer, phone string) error {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := openSession(ctx, opts, log)
	if err != nil {
		return err
	}
	defer c.Close()
	phone = strings.TrimSpace(phone)
	// The name shown in the phone's list of linked devices (a library-wide
	// setting, used only while linking).
	store.DeviceProps.Os = ptr(deviceName)
	vs := versions{latest: opts.LatestVersion, dir: opts.DataDir, log: log}
	if opts.ClientVersion != "" {
		if vs.forced, err = ParseClientVersion(opts.ClientVersion); err != nil {
			return fmt.Errorf("whatsapp: whatsapp.client_version: %w", err)
		}
	}
	if vs.latest == nil {
		vs.latest = fetchLatestVersion
	}
	if v, from := vs.pick(ctx); from != "web.whatsapp.com" {
		log.Info("WhatsApp Web client version", "version", v.String(), "from", from)
	}
	for attempt := 0; ; attempt++ {
		cli, err := newWhatsmeow(ctx, c, log)
		if err != nil {
			return err
		}
		cli.EnableAutoReconnect = true // after pairing, WhatsApp closes the connection once
		// No network must say so, not pass for a code nobody scanned: the
		// first connection's error is returned, not retried in the
		// background.
		cli.InitialAutoReconnect = false
		if id := cli.Store.ID; id != nil {
			fmt.Fprintf(w, "WhatsApp is already linked (account +%s). To link another account, run `bot whatsapp logout` first.\n", id.User)
			return nil
		}
		err = link(ctx, cli, w, phone)
		if errors.Is(err, errLoginOutdated) {
			rejected := currentClientVersion()
			if attempt == 0 {
				fmt.Fprintln(w, "WhatsApp says this client version is outdated; fetching the current version and trying again…")
				_, changed, verr := vs.refresh(ctx, rejected)
				if verr == nil && changed {
					continue
				}
				err = verr
			} else {
				err = nil
			}
			return &OutdatedError{Version: rejected, Forced: !vs.forced.IsZero(), Cause: err}
		}
		if err == nil && cli.Store.ID != nil {
			vs.remember(currentClientVersion())
			fmt.Fprintf(w, "Linked WhatsApp account +%s. Start the bot and send it a message.\n", cli.Store.ID.User)
		}
		return err
	}
}

func ptr[T any](v T) *T { return &v }

// linker is the part of *whatsmeow.Client that linking uses.
type linker interface {
	GetQRChannel(ctx context.Context) (<-chan whatsmeow.QRChannelItem, error)
	AddEventHandler(handler whatsmeow.EventHandler) uint32
	Connect() error
	Disconnect()
	PairPhone(ctx context.Context, phone string, showPushNotification bool, clientType whatsmeow.PairClientType, clientDisplayName string) (string, error)
}

// linkSettle is how long linking waits, after the phone accepted the
// link, for the first full login, so the phone finishes setting the device
// up before the connection is closed.
const linkSettle = 30 * time.Second

// link runs one linking attempt on l: QR codes, or a pairing code for phone.
func link(ctx context.Context, l linker, w io.Writer, phone string) error {
	qr, err := l.GetQRChannel(ctx)
	if err != nil {
		return fmt.Errorf("whatsapp: starting the login: %w", err)
	}
	connected := make(chan struct{}, 1)
	var dropped atomic.Bool // the connection dropped (whatsmeow then reports a "timeout")
	l.AddEventHandler(func(evt any) {
		switch evt.(type) {
		case *events.Connected:
			select {
			case connected <- struct{}{}:
			default:
			}
		case *events.Disconnected:
			dropped.Store(true)
		}
	})
	if err := l.Connect(); err != nil {
		var sc socket.ErrWithStatusCode
		if errors.As(err, &sc) && sc.StatusCode == 405 {
			return errLoginOutdated
		}
		return fmt.Errorf("whatsapp: connecting to WhatsApp: %w", err)
	}
	defer l.Disconnect()
	if phone == "" {
		fmt.Fprintln(w, "Link Recall to WhatsApp. "+LinkHint)
	}
	paired, codes := false, 0
	for {
		var item whatsmeow.QRChannelItem
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case item, ok = <-qr:
		}
		if !ok {
			return errors.New("whatsapp: the login ended without a result; run the command again")
		}
		switch item.Event {
		case whatsmeow.QRChannelEventCode:
			codes++
			if phone == "" {
				fmt.Fprintln(w)
				qrterminal.GenerateHalfBlock(item.Code, qrterminal.L, w)
				fmt.Fprintf(w, "%s (A new code follows in %s.)\n", LinkHint, item.Timeout.Round(time.Second))
				continue
			}
			if paired {
				continue
			}
			code, err := l.PairPhone(ctx, phone, true, whatsmeow.PairClientChrome, "Chrome (Linux)")
			if err != nil {
				if errors.Is(err, whatsmeow.ErrIQRateOverLimit) {
					return fmt.Errorf("whatsapp: WhatsApp refuses more pairing codes for now (rate limited); wait an hour or so, or link with the QR code (run the command without --phone): %w", err)
				}
				if errors.Is(err, whatsmeow.ErrPhoneNumberTooShort) || errors.Is(err, whatsmeow.ErrPhoneNumberIsNotInternational) {
					return fmt.Errorf("whatsapp: %q is not a phone number in international format (e.g. +4915112345678): %w", phone, err)
				}
				return fmt.Errorf("whatsapp: asking for a pairing code: %w", err)
			}
			paired = true
			fmt.Fprintf(w, "Your pairing code: %s\n%s\n", code, pairHint)
		case whatsmeow.QRChannelSuccess.Event:
			fmt.Fprintln(w, "The phone accepted the link; finishing…")
			t := time.NewTimer(linkSettle)
			defer t.Stop()
			select {
			case <-connected:
			case <-t.C:
			case <-ctx.Done():
			}
			return nil
		case whatsmeow.QRChannelTimeout.Event:
			if dropped.Load() {
				return errors.New("whatsapp: the connection to WhatsApp dropped during the login (a network problem?); check the network and run the command again")
			}
			if codes == 0 {
				// The connection closed before WhatsApp offered a code.
				return errors.New("whatsapp: the connection to WhatsApp closed before a code came; check the network (and a proxy or firewall) and run the command again")
			}
			return errors.New("whatsapp: no code was used in time; run the command again")
		case whatsmeow.QRChannelClientOutdated.Event:
			return errLoginOutdated
		case whatsmeow.QRChannelScannedWithoutMultidevice.Event:
			return errors.New("whatsapp: the code was scanned, but the phone has multi-device turned off; update WhatsApp on the phone and try again")
		case whatsmeow.QRChannelEventError:
			return fmt.Errorf("whatsapp: linking failed: %w", item.Error)
		default:
			return fmt.Errorf("whatsapp: linking failed (%s); run the command again", item.Event)
		}
	}
}

// Logout unlinks the bot's device from the WhatsApp account and deletes the
// session. When WhatsApp cannot be reached the session is still deleted
// here, and the error says to remove the device on the phone (WhatsApp →
// Settings → Linked devices). Without a linked account it does nothing.
func Logout(ctx context.Context, opts Options) error {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := openSession(ctx, opts, log)
	if err != nil {
		return err
	}
	defer c.Close()
	cli, err := newWhatsmeow(ctx, c, log)
	if err != nil {
		return err
	}
	if cli.Store.ID == nil {
		log.Info("no WhatsApp account is linked; nothing to do")
		return nil
	}
	ready := make(chan bool, 1) // true: logged in; false: WhatsApp removed the device already
	cli.AddEventHandler(func(evt any) {
		var v bool
		switch evt.(type) {
		case *events.Connected:
			v = true
		case *events.LoggedOut:
		default:
			return
		}
		select {
		case ready <- v:
		default:
		}
	})
	cli.InitialAutoReconnect = false
	err = cli.Connect()
	if err == nil {
		t := time.NewTimer(30 * time.Second)
		defer t.Stop()
		select {
		case ok := <-ready:
			if !ok {
				return nil // removed on the phone already; whatsmeow deleted the session
			}
			err = cli.Logout(ctx)
		case <-t.C:
			err = errors.New("timed out waiting for the connection")
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		return nil
	}
	cli.Disconnect()
	if derr := cli.Store.Delete(context.WithoutCancel(ctx)); derr != nil {
		return fmt.Errorf("whatsapp: logging out failed (%v) and deleting the session failed too: %w", err, derr)
	}
	return fmt.Errorf("whatsapp: the session was deleted here, but WhatsApp could not be told (%v); remove the device on your phone: WhatsApp → Settings → Linked devices", err)
}
