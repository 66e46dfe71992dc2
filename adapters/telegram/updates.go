package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/pipeline"
)

// item is one received update and what to do with it.
type item struct {
	u      *models.Update
	in     pipeline.Inbound
	handle bool // in goes to accept and the pipeline

	notice        bool // answer TextOnlyReply directly (if the gate allows)
	noticeKey     pipeline.Key
	noticeReplyTo string
	album         string // media_group_id of the message, "" when none
	albumItem     bool   // in is an album's item without caption (see answerAlbum)

	migrateFrom, migrateTo int64 // a group became a supergroup (0: not this)
}

// prepare decides what to do with an update.
func (a *Adapter) prepare(u *models.Update, me Me) item {
	it := item{u: u}
	if m := u.Message; m != nil {
		it.album = m.MediaGroupID
		switch {
		case m.MigrateFromChatID != 0:
			it.migrateFrom, it.migrateTo = m.MigrateFromChatID, m.Chat.ID
		case m.MigrateToChatID != 0:
			it.migrateFrom, it.migrateTo = m.Chat.ID, m.MigrateToChatID
		}
	}
	if in, ok := toInbound(u, me, a.opts.GroupsReply); ok {
		if in.Media != nil && it.album != "" && in.Text == "" {
			// An album's item without caption: the album is answered
			// once — through its captioned item, or else through its
			// first item once the others had time to arrive.
			if !a.notices.firstOf(it.album) {
				return it
			}
			in.Media.Fetch = fetcher(a.api, a.files, a.opts.Token, in.Media.Ref)
			it.in, it.albumItem = in, true
			return it
		}
		a.notices.covered(it.album) // an album with a caption is answered: no notice
		if in.IsGroup && a.unknownCommand(u.Message) {
			return it // most likely another bot's: not ours to answer
		}
		if in.Choice != "" {
			in.Choice = a.data.resolve(in.Choice)
		}
		if in.Media != nil && in.Media.Ref != "" {
			in.Media.Fetch = fetcher(a.api, a.files, a.opts.Token, in.Media.Ref)
		}
		it.in, it.handle = in, true
		return it
	}
	if key, replyTo, ok := textOnly(u, me); ok {
		if a.opts.Allowed == nil || a.opts.Allowed(Channel+":"+key.Chat) {
			it.notice, it.noticeKey, it.noticeReplyTo = true, key, replyTo
		}
	}
	return it
}

// migrate handles a group's upgrade to a supergroup: replies meant for
// the group go to the supergroup from now on, and what is stored for the
// group moves to it (Options.OnMigrate; a failure is logged, the bot goes
// on). Telegram sends the upgrade twice (once in each chat); the second
// finds nothing left to move.
func (a *Adapter) migrate(ctx context.Context, it item) {
	if it.migrateFrom == 0 || it.migrateTo == 0 || it.migrateFrom == it.migrateTo {
		return
	}
	a.out.migrated(it.migrateFrom, it.migrateTo)
	from := pipeline.Key{Channel: Channel, Chat: strconv.FormatInt(it.migrateFrom, 10)}
	to := pipeline.Key{Channel: Channel, Chat: strconv.FormatInt(it.migrateTo, 10)}
	if a.opts.OnMigrate == nil {
		return
	}
	if err := a.opts.OnMigrate(ctx, from, to); err != nil {
		a.log.Error("moving a group's memory to the supergroup it became failed", "from", from, "to", to, "err", err)
		return
	}
	a.log.Info("the group became a supergroup; its memory moved with it", "from", from, "to", to)
}

// unknownCommand reports whether m is a command the bot does not know,
// written without "@ThisBot" (in a group it is most likely another bot's).
func (a *Adapter) unknownCommand(m *models.Message) bool {
	if m == nil || len(a.known) == 0 {
		return false
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return false
	}
	name, ok := strings.CutPrefix(fields[0], "/")
	if !ok || name == "" || strings.Contains(name, "@") {
		return false
	}
	return !a.known[strings.ToLower(name)]
}

// acceptPending accepts the items not yet done, in order within each
// conversation and conversations concurrently (the store batches concurrent
// writes into one transaction). done[i] is set for each accepted item. It
// returns the failures; items after a failure in the same conversation are
// left for the next attempt so their order is kept.
func (a *Adapter) acceptPending(ctx context.Context, items []item, done []bool) error {
	if a.accept == nil {
		for i := range done {
			done[i] = true
		}
		return nil
	}
	var order []pipeline.Key
	groups := map[pipeline.Key][]int{}
	for i, it := range items {
		if done[i] {
			continue
		}
		if !it.handle {
			done[i] = true
			continue
		}
		if _, seen := groups[it.in.Key]; !seen {
			order = append(order, it.in.Key)
		}
		groups[it.in.Key] = append(groups[it.in.Key], i)
	}
	run := func(idxs []int) error {
		for _, i := range idxs {
			if err := a.accept(ctx, items[i].in); err != nil {
				return fmt.Errorf("storing message %s of %s: %w", items[i].in.MessageID, items[i].in.Key, err)
			}
			done[i] = true
		}
		return nil
	}
	if len(order) == 1 {
		return run(groups[order[0]])
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, k := range order {
		idxs := groups[k]
		wg.Go(func() {
			if err := run(idxs); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// dispatch hands an accepted item to the pipeline, answering a button press
// and sending the text-only notice in the background. It returns an error
// only when the pipeline has stopped: the update must then be delivered
// again.
func (a *Adapter) dispatch(bg context.Context, it item) error {
	if q := it.u.CallbackQuery; q != nil && q.ID != "" {
		// Every press is answered, also one the bot does not handle:
		// else the button's spinner keeps turning.
		a.bg.Go(func() { a.answerCallback(bg, q, it.handle) })
	}
	if it.notice {
		a.bg.Go(func() { a.sendNotice(bg, it) })
		return nil
	}
	if it.albumItem {
		a.bg.Go(func() { a.answerAlbum(bg, it) })
		return nil
	}
	if !it.handle {
		return nil
	}
	err := a.submit(it.in, a.Sender())
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pipeline.ErrStopped), errors.Is(err, pipeline.ErrUnavailable):
		return err
	default:
		// A full conversation queue: the message is stored when it was
		// meant for the LLM; dropping it here keeps the others flowing.
		a.log.Warn("the pipeline refused a message", "key", it.in.Key, "msg_id", it.in.MessageID, "err", err)
		return nil
	}
}

// answerCallback stops the spinner on the pressed button and, when the
// press is handled, takes the buttons off the question so they don't linger
// (see pressedOwnQuestion). A failure (an old query after a restart, say) is
// only logged.
func (a *Adapter) answerCallback(ctx context.Context, q *models.CallbackQuery, handled bool) {
	ctx, cancel := context.WithTimeout(ctx, a.callTimeout)
	defer cancel()
	if _, err := a.api.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID}); err != nil && ctx.Err() == nil {
		a.log.Debug("answering a button press failed", "err", err)
	}
	if !handled || !pressedOwnQuestion(q) {
		return
	}
	// Not paced: taking the buttons off is cosmetic and must not hold up
	// the answer to the press; a refusal is only logged.
	m := q.Message.Message
	if _, err := a.api.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: m.Chat.ID, MessageID: m.ID}); err != nil && ctx.Err() == nil {
		a.log.Debug("removing the buttons of an answered question failed", "err", err)
	}
}

// pressedOwnQuestion reports whether q pressed a button of a question asked
// to the presser: in a private chat every question is; in a group one that
// replies to the presser's message (a question replies to the command that
// asked for it). Another member's press leaves the buttons to the asker.
func pressedOwnQuestion(q *models.CallbackQuery) bool {
	m := q.Message.Message
	if m == nil || m.ReplyMarkup == nil || len(m.ReplyMarkup.InlineKeyboard) == 0 {
		return false
	}
	if m.Chat.Type == models.ChatTypePrivate {
		return true
	}
	r := m.ReplyToMessage
	return r != nil && r.From != nil && r.From.ID == q.From.ID
}

// answerAlbum hands an album's item without caption to the pipeline when,
// once the album's other items had time to arrive, none had a caption and
// no other item was handed over: an album is answered once.
func (a *Adapter) answerAlbum(ctx context.Context, it item) {
	if !a.notices.wait(ctx, it.album) || !a.notices.claim(it.album) {
		return
	}
	if err := a.submit(it.in, a.Sender()); err != nil && !errors.Is(err, pipeline.ErrStopped) {
		a.log.Warn("the pipeline refused an album", "key", it.in.Key, "msg_id", it.in.MessageID, "err", err)
	}
}

// sendNotice tells a private chat that the bot reads text only, when the
// gate allows: once per album, none for an album with a caption, once per
// chat every few minutes.
func (a *Adapter) sendNotice(ctx context.Context, it item) {
	key, replyTo := it.noticeKey, it.noticeReplyTo
	if !a.notices.wait(ctx, it.album) || !a.notices.allow(key, it.album) {
		a.log.Debug("no text-only notice: one was sent lately, or the album is answered", "key", key, "msg_id", replyTo)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.callTimeout)
	defer cancel()
	if _, err := a.out.Send(ctx, pipeline.Outbound{Key: key, Text: TextOnlyReply, Plain: true, ReplyTo: replyTo}); err != nil && !errors.Is(err, ErrBlocked) {
		a.log.Warn("sending the text-only notice failed", "key", key, "err", err)
	}
}
