-- 0007: a note records who wrote it (the user id as access lists name it,
-- "telegram:123456"), so that in a group only its author or a bot admin
-- deletes or replaces it. '' for the notes written before: author unknown.
ALTER TABLE memories ADD COLUMN author TEXT NOT NULL DEFAULT '';
