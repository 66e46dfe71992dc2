-- 0003 (PostgreSQL): named leases (package lease). A lease is held by one
-- holder (a replica) until expires_at; the holder renews it, anyone takes
-- it over once it expired. The primary key, not memory, says who holds it.
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL
);
