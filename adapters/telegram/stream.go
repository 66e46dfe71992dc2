package telegram

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/recallbot/recall/adapters/telegram/format"
	"github.com/recallbot/recall/pipeline"
)

// DefaultStreamEvery is the least time between two updates of a streamed
// reply (Telegram allows about one message per second in a chat).
const DefaultStreamEvery = time.Second

// streamCallTimeout bounds each update of a streamed reply: a slow update
// is given up, never waited for at length.
const streamCallTimeout = 10 * time.Second

// streamSender is the sender with streaming (Options.Stream): replies grow
// while the model writes them.
type streamSender struct{ *sender }

var (
	_ pipeline.Streamer    = streamSender{}
	_ pipeline.ShownStream = (*replyStream)(nil)
)

// Stream starts a reply shown as it grows: in a private chat as a draft
// (sendMessageDraft) while drafts work, else as a message sent with the
// first text and edited (editMessageText) as more arrives, at most once per
// streamEvery, as plain text. Finish turns it into the formatted reply.
func (s streamSender) Stream(ctx context.Context, key pipeline.Key, replyTo string) pipeline.Stream {
	st := &replyStream{
		s: s.sender, key: key, every: s.streamEvery,
		kick: make(chan struct{}, 1), finish: make(chan struct{}), exited: make(chan struct{}),
	}
	chat, thread, bad := target(key)
	st.chat, st.thread, st.bad = s.chatNow(chat), thread, bad
	if n, err := strconv.Atoi(replyTo); err == nil && n > 0 && st.chat == chat {
		st.replyTo = n
	}
	if st.bad != nil {
		close(st.exited) // Finish reports the error
		return st
	}
	if st.chat > 0 && s.drafts.Load() {
		st.draftID = int(s.draftSeq.Add(1))
	}
	go st.run(ctx)
	return st
}

// replyStream is one reply being streamed. One goroutine (run) shows the
// text; Append only hands it text, so the model's stream never waits for
// Telegram.
type replyStream struct {
	s       *sender
	key     pipeline.Key
	chat    int64
	thread  int
	replyTo int
	every   time.Duration
	bad     error // the key is not a Telegram chat

	mu         sync.Mutex
	text       strings.Builder
	cancelCall context.CancelFunc // cancels an update in flight that Finish may abandon
	onShown    func(id string)    // OnShown's: told the message id once it is sent
	kick       chan struct{}      // text was appended (capacity 1)
	finish     chan struct{}      // closed by Finish
	exited     chan struct{}      // closed when run returned

	// Owned by run until it returns, then by Finish.
	draftID int       // != 0: showing a draft
	msgID   int       // the message shown and edited; 0 before the first send
	shown   string    // the text shown
	broken  bool      // showing failed: the reply goes as new messages
	last    time.Time // end of the latest update
}

// OnShown implements pipeline.ShownStream: fn is told the id of the
// message the reply is shown in (never for a draft).
func (st *replyStream) OnShown(fn func(id string)) {
	st.mu.Lock()
	st.onShown = fn
	st.mu.Unlock()
}

// Append adds text; the next update shows it.
func (st *replyStream) Append(text string) {
	if text == "" {
		return
	}
	st.mu.Lock()
	st.text.WriteString(text)
	st.mu.Unlock()
	select {
	case st.kick <- struct{}{}:
	default:
	}
}

// run shows the text as it grows until Finish, at most one update per
// st.every (counted from the end of the previous update), within the chat's
// flood limits (the pacer: in a group edits are further apart) and never
// before a 429's retry_after.
func (st *replyStream) run(ctx context.Context) {
	defer close(st.exited)
	for {
		select {
		case <-st.kick:
		case <-st.finish:
			return
		case <-ctx.Done():
			return
		}
		if wait := st.every - time.Since(st.last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-st.finish:
				t.Stop()
				return
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		if st.preview() == st.shown {
			continue
		}
		if !st.s.pace.wait(ctx, st.finish, st.chat, st.msgID != 0 || st.draftID != 0) {
			return
		}
		text := st.preview() // what arrived while waiting shows too
		if text == "" || text == st.shown {
			continue
		}
		st.show(ctx, text)
		st.last = time.Now()
		if st.broken {
			return
		}
	}
}

// preview is what to show of the text so far: plain text (half-written
// Markdown is not rendered), the first message's worth of it.
func (st *replyStream) preview() string {
	st.mu.Lock()
	md := st.text.String()
	st.mu.Unlock()
	parts := format.SplitPlain(format.Plain(md), format.Limit)
	if len(parts) == 0 {
		return ""
	}
	return parts[0]
}

// show makes text visible: as a draft, or by sending the message once and
// editing it afterwards. Failures are logged and change how the rest is
// shown; they are never returned: Finish delivers the reply anyway.
func (st *replyStream) show(ctx context.Context, text string) {
	if st.draftID != 0 {
		err := st.callAbandonable(ctx, func(ctx context.Context) error {
			_, err := st.s.api.SendMessageDraft(ctx, &bot.SendMessageDraftParams{
				ChatID: st.chat, MessageThreadID: st.thread, DraftID: strconv.Itoa(st.draftID), Text: text,
			})
			return err
		})
		switch {
		case err == nil:
			st.shown = text
			return
		case st.rateLimited(err, "sendMessageDraft") || st.abandoned() || ctx.Err() != nil:
			return
		}
		// Drafts do not work for this bot or chat: show a message and edit
		// it instead, from now on (and for later replies when Telegram
		// refused the call itself).
		st.s.log.Info("streaming drafts failed; editing a message instead", "key", st.key, "err", err)
		if errors.Is(err, bot.ErrorBadRequest) || errors.Is(err, bot.ErrorNotFound) {
			st.s.drafts.Store(false)
		}
		st.draftID = 0
	}
	if st.msgID == 0 {
		// Never abandoned: once sent, the message must be known, or it
		// would stay behind beside the reply.
		p := &bot.SendMessageParams{ChatID: st.chat, MessageThreadID: st.thread, Text: text, LinkPreviewOptions: st.s.preview}
		if st.replyTo != 0 {
			p.ReplyParameters = &models.ReplyParameters{MessageID: st.replyTo, AllowSendingWithoutReply: true}
		}
		cctx, cancel := context.WithTimeout(ctx, streamCallTimeout)
		msg, err := st.s.api.SendMessage(cctx, p)
		cancel()
		switch {
		case err == nil && msg != nil && msg.ID != 0:
			st.msgID, st.shown = msg.ID, text
			st.mu.Lock()
			fn := st.onShown
			st.mu.Unlock()
			if fn != nil {
				fn(strconv.Itoa(msg.ID))
			}
		case err != nil && st.rateLimited(err, "sendMessage"):
			// Nothing was sent; try again after retry_after.
		default:
			// It may have been delivered: stop; the reply goes whole.
			st.broken = true
			st.warn("sendMessage", err)
		}
		return
	}
	err := st.callAbandonable(ctx, func(ctx context.Context) error {
		_, err := st.s.api.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: st.chat, MessageID: st.msgID, Text: text, LinkPreviewOptions: st.s.preview})
		return err
	})
	switch {
	case err == nil || isNotModified(err):
		st.shown = text
	case st.rateLimited(err, "editMessageText") || st.abandoned() || ctx.Err() != nil:
		// Skip updates until retry_after; or Finish took over.
	default:
		st.broken = true // Finish sends the reply as a new message
		st.warn("editMessageText", err)
	}
}

// callAbandonable runs an update that Finish may cancel (an edit or a
// draft: the final message replaces it anyway).
func (st *replyStream) callAbandonable(ctx context.Context, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, streamCallTimeout)
	defer cancel()
	st.mu.Lock()
	select {
	case <-st.finish:
		st.mu.Unlock()
		return context.Canceled
	default:
	}
	st.cancelCall = cancel
	st.mu.Unlock()
	err := fn(cctx)
	st.mu.Lock()
	st.cancelCall = nil
	st.mu.Unlock()
	return err
}

// abandoned reports whether Finish was called.
func (st *replyStream) abandoned() bool {
	select {
	case <-st.finish:
		return true
	default:
		return false
	}
}

// rateLimited reports whether err is a 429, and then holds the chat's
// calls, this stream's updates and its final edit included, until its
// retry_after.
func (st *replyStream) rateLimited(err error, call string) bool {
	if !st.s.rateLimited(st.chat, err) {
		return false
	}
	st.s.log.Info("rate limited by Telegram while streaming; skipping updates", "key", st.key, "call", call)
	return true
}

func (st *replyStream) warn(call string, err error) {
	if err == nil {
		err = errors.New("the answer carried no message")
	}
	st.s.log.Warn("showing a streamed reply failed; it will be sent whole", "key", st.key, "call", call, "err", err)
}

// Finish stops the updates and delivers out: the shown message is edited
// into its first part (formatted) and the other parts are sent after it;
// when nothing was shown, only a draft, or the message cannot be edited,
// out is sent as new messages.
func (st *replyStream) Finish(ctx context.Context, out pipeline.Outbound) (string, error) {
	st.mu.Lock()
	select {
	case <-st.finish:
		st.mu.Unlock()
		return "", errors.New("telegram: stream finished twice")
	default:
	}
	close(st.finish)
	if st.cancelCall != nil {
		st.cancelCall()
	}
	st.mu.Unlock()
	<-st.exited

	out.Key = st.key
	if st.replyTo != 0 {
		out.ReplyTo = strconv.Itoa(st.replyTo)
	}
	if st.bad != nil || st.msgID == 0 || st.broken {
		return st.s.Send(ctx, out)
	}
	o, out, parts, err := st.s.prepare(out)
	if err != nil {
		return "", err
	}
	if len(parts) == 0 {
		return strconv.Itoa(st.msgID), nil // nothing to say: what was shown stays
	}
	// The final edit keeps to the pace of the updates and to the chat's
	// flood limits, and waits out a 429 met while streaming however long:
	// the reply is delivered when Telegram allows, never dropped.
	if d := st.every - time.Since(st.last); d > 0 && !sleep(ctx, d) {
		return "", st.s.sendError(out.Key, ctx.Err())
	}
	o.replyTo = 0
	err = st.edit(ctx, o, parts[0], !out.Plain, len(parts) == 1)
	if err != nil && !out.Plain && isParseError(err) {
		st.s.log.Warn("Telegram could not parse the formatted text; editing as plain text", "key", out.Key, "err", err)
		plain := format.SplitPlain(plainOf(out.Text, parts, 0), format.Limit)
		if len(plain) > 0 {
			err = st.edit(ctx, o, plain[0], false, len(parts) == 1 && len(plain) == 1)
			if err == nil || isNotModified(err) {
				// The rest of the plain text, then the other parts.
				id := strconv.Itoa(st.msgID)
				for j, q := range plain[1:] {
					if id, err = st.s.sendPart(ctx, o, q, false, false, len(parts) == 1 && j == len(plain)-2); err != nil {
						return id, st.s.sendError(out.Key, err)
					}
				}
				if len(parts) == 1 {
					return id, nil
				}
				return st.s.sendParts(ctx, o, out, parts, 1)
			}
		}
	}
	if err != nil && !isNotModified(err) {
		if errors.Is(err, bot.ErrorForbidden) || ctx.Err() != nil {
			return "", st.s.sendError(out.Key, err)
		}
		st.s.log.Warn("editing the streamed reply into the final one failed; sending it as a new message", "key", out.Key, "err", err)
		return st.s.Send(ctx, out)
	}
	if len(parts) == 1 {
		return strconv.Itoa(st.msgID), nil
	}
	return st.s.sendParts(ctx, o, out, parts, 1)
}

// edit replaces the streamed message's text, waiting out 429s within the
// sender's budget.
func (st *replyStream) edit(ctx context.Context, o *outgoing, text string, rich, last bool) error {
	p := &bot.EditMessageTextParams{ChatID: st.chat, MessageID: st.msgID, Text: text, LinkPreviewOptions: st.s.preview}
	if rich {
		p.ParseMode = models.ParseModeHTML
	}
	if last && o.markup != nil {
		p.ReplyMarkup = o.markup
	}
	return st.s.call(ctx, st.chat, true, st.s.sendTimeout, func(ctx context.Context) error {
		_, err := st.s.api.EditMessageText(ctx, p)
		return err
	})
}
