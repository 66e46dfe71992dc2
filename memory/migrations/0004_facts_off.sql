-- 0004: an owner can turn fact extraction off (/facts off).
ALTER TABLE owners ADD COLUMN facts_off INTEGER NOT NULL DEFAULT 0;
