package whatsapp

import "errors"

var (
	// ErrNotLinked is returned by Run when no WhatsApp account is linked
	// yet. The other channels keep running.
	ErrNotLinked = errors.New("whatsapp: no linked WhatsApp account; run `bot whatsapp login` (under Docker: docker compose run --rm -it recall whatsapp login) and start the bot again")

	// ErrLoggedOut is returned by Run when WhatsApp removed the linked
	// device (from the phone's Linked devices, or by WhatsApp). The session
	// is gone; only this channel stops.
	ErrLoggedOut = errors.New("whatsapp: the linked device was removed; run `bot whatsapp login` again")

	// ErrStreamReplaced is returned by Run when another client connected
	// with the same session (a second copy of the bot on the same data):
	// WhatsApp keeps one connection per device. Reconnecting would only
	// throw the other one out in turn, so this channel stops.
	ErrStreamReplaced = errors.New("whatsapp: another client connected with this session (is a second copy of the bot running on the same data?); this one stopped")

	// ErrOutdated is returned by Run when WhatsApp still rejects the client
	// version (405) after updating it to the latest web version once.
	ErrOutdated = errors.New("whatsapp: WhatsApp rejects this client version (405 client outdated) even after updating it; upgrade Recall")

	// ErrClosed is returned by sends after Close.
	ErrClosed = errors.New("whatsapp: adapter closed")

	// ErrNotConnected is returned by a send that gave up waiting for the
	// connection.
	ErrNotConnected = errors.New("whatsapp: not connected to WhatsApp")
)
