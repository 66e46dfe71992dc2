-- 0007 (PostgreSQL): conversations that wait for a replica (turnqueue): a
-- command there asked a question (/summary, /purge) whose answer only that
-- replica understands, so the conversation's next turns are claimed by it
-- alone while until runs. The holder renews until while the question
-- waits; a replica that died lets it lapse and the others go on.
CREATE TABLE turn_affinity (
    conv_key TEXT PRIMARY KEY,
    holder   TEXT NOT NULL,
    until    TIMESTAMPTZ NOT NULL
);
