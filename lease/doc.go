// Package lease owns named leases in PostgreSQL: "at most one replica does
// this at a time" (polling Telegram, holding the WhatsApp connection) for
// any number of Recall processes on one database. A lease has a name, a
// holder and an expiry; the holder renews it well before it expires, and
// any other holder takes it over once it has expired — so a replica that
// dies (or loses the database) gives its lease up within one TTL, without a
// cluster protocol of our own: the table leases' primary key decides.
//
// Expiry is compared with the caller's clock (Options.Now, default
// time.Now): replicas' clocks must agree within a small part of the TTL,
// which NTP gives. A holder stops acting on a lease (Run cancels its work)
// as soon as it cannot renew it before its own idea of the expiry.
package lease
