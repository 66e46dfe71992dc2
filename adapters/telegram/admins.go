package telegram

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-telegram/bot"

	"github.com/recallbot/recall/pipeline"
)

var _ pipeline.ChatAdmins = (*sender)(nil)

// IsChatAdmin reports whether the Telegram user userID is the owner or an
// administrator of the group of key (getChatAdministrators, asked each
// time: it guards rare commands such as /export in a group).
func (s *sender) IsChatAdmin(ctx context.Context, key pipeline.Key, userID string) (bool, error) {
	chat, _, err := target(key)
	if err != nil {
		return false, err
	}
	if chat > 0 {
		return false, nil // a private chat has no administrators
	}
	id, err := strconv.ParseInt(userID, 10, 64)
	if err != nil {
		return false, fmt.Errorf("telegram: %q is not a user id", userID)
	}
	ctx, cancel := context.WithTimeout(ctx, s.sendTimeout)
	defer cancel()
	members, err := s.api.GetChatAdministrators(ctx, &bot.GetChatAdministratorsParams{ChatID: chat})
	if err != nil {
		return false, fmt.Errorf("listing the administrators of %s: %w", key, err)
	}
	for _, m := range members {
		switch {
		case m.Owner != nil && m.Owner.User != nil && m.Owner.User.ID == id,
			m.Administrator != nil && m.Administrator.User.ID == id:
			return true, nil
		}
	}
	return false, nil
}
