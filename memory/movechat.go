package memory

import (
	"context"
	"fmt"

	"github.com/recallbot/recall/pipeline"
)

// MoveChat moves everything stored for the chat of from (every
// conversation of its owner: the chat and its topics; settings, notes and
// facts) to the chat of to, for a chat whose id changed (a Telegram group
// upgraded to a supergroup). It merges into what to already holds, then
// purges from. A chat without data is left alone; moving again after a
// crash in between merges again and purges.
func (s *Store) MoveChat(ctx context.Context, from, to pipeline.Key) (ImportReport, error) {
	if from.Channel != to.Channel || from.Chat == to.Chat || from.Chat == "" || to.Chat == "" {
		return ImportReport{}, fmt.Errorf("moving chat %s to %s: not two chats of one channel", from, to)
	}
	d, err := s.Export(ctx, from.Owner(), nil)
	if err != nil {
		return ImportReport{}, fmt.Errorf("moving chat %s: reading it: %w", from, err)
	}
	if d.Empty() {
		return ImportReport{}, nil
	}
	rekey := func(k string) string {
		key, err := pipeline.ParseKey(k)
		if err != nil || key.Owner() != from.Owner() {
			return k
		}
		key.Chat = to.Chat
		return key.String()
	}
	d.Owner = to.Owner()
	if d.Settings != nil {
		cp := *d.Settings
		cp.Owner = d.Owner
		d.Settings = &cp
	}
	for i := range d.Facts {
		if d.Facts[i].Key != "" {
			d.Facts[i].Key = rekey(d.Facts[i].Key)
		}
	}
	for i := range d.Conversations {
		d.Conversations[i].Key = rekey(d.Conversations[i].Key)
	}
	e := NewExport()
	e.Owners = []OwnerData{d}
	rep, err := s.Import(ctx, e)
	if err != nil {
		return rep, fmt.Errorf("moving chat %s to %s: %w", from, to, err)
	}
	if _, err := s.Purge(ctx, PurgeScope{Owner: from.Owner()}); err != nil {
		return rep, fmt.Errorf("moving chat %s to %s: removing the old copy: %w", from, to, err)
	}
	return rep, nil
}
