-- 0010 (PostgreSQL): a note records who wrote it, as SQLite's migration
-- 0007 ('' for the notes written before: author unknown).
ALTER TABLE memories ADD COLUMN author TEXT NOT NULL DEFAULT '';
