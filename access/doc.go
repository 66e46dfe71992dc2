// Package access owns who may talk to the bot: the access list (the config's
// open mode, allowed users and admins, and the admins' later decisions), the
// pairing requests of unknown users with their codes, and the access stage
// (List.Middleware), first in the turn's chain: an unknown sender gets one
// clear answer with their id and a pairing code; nothing of theirs is stored
// and nothing reaches an LLM.
//
// Decisions and pairing requests survive restarts through a Store (the
// memory store implements it); List rereads it now and then, so a decision
// made beside the running bot (`bot allow`, `bot deny`) takes effect.
package access
