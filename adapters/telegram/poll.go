package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"
)

// Long polling is implemented here rather than with the library's poller,
// which confirms an update (advances the offset) before it is handled: a
// crash then loses it. Here an update is confirmed only after the whole batch
// it came in was accepted (made durable) and handed to the pipeline; the
// confirmation is the offset of the next getUpdates call.

// pollLimit is the most updates one getUpdates call returns.
const pollLimit = 100

// maxAnswer caps the size of a getUpdates answer read into memory.
const maxAnswer = 64 << 20

// apiError is an error answer of the Bot API ({"ok":false,…}) or an HTTP
// error without one.
type apiError struct {
	Code        int
	Description string
	RetryAfter  int // seconds; set with 429
}

func (e *apiError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("Bot API error %d: %s (retry after %ds)", e.Code, e.Description, e.RetryAfter)
	}
	return fmt.Sprintf("Bot API error %d: %s", e.Code, e.Description)
}

// poll receives updates until ctx ends or the token is rejected.
func (a *Adapter) poll(ctx context.Context, me Me) error {
	var offset int64
	failures := 0
	for ctx.Err() == nil {
		raws, err := a.getUpdates(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ae *apiError
			if errors.As(err, &ae) {
				switch ae.Code {
				case http.StatusUnauthorized:
					return fmt.Errorf("%w: Telegram answered 401 Unauthorized to getUpdates", ErrBadToken)
				case http.StatusNotFound:
					return fmt.Errorf("%w: %s answered 404 Not Found to getUpdates (also check telegram.api_url)", ErrBadToken, a.opts.APIURL)
				}
			}
			wait := a.backoff(failures)
			if ae != nil && ae.Code == http.StatusTooManyRequests {
				wait = time.Duration(max(ae.RetryAfter, 1)) * time.Second
			}
			failures++
			if ae != nil && ae.Code == http.StatusConflict {
				err = fmt.Errorf("%w: another instance is polling with this token, or a webhook is set", err)
			}
			a.setHealth(fmt.Errorf("cannot receive updates from the Telegram Bot API (%d failed attempts): %w", failures, err))
			lvl := a.log.Warn
			if failures == 1 && ae == nil {
				lvl = a.log.Info // a dropped long poll now and then is normal
			}
			lvl("receiving updates failed, retrying", "retry_in", wait.Round(time.Millisecond), "err", err)
			if !sleep(ctx, wait) {
				return nil
			}
			continue
		}
		if failures > 0 && a.opts.OnReconnect != nil {
			a.opts.OnReconnect()
		}
		failures = 0
		a.lastPoll.Store(a.now().UnixNano())
		a.setHealth(nil)
		updates, next := a.decodeUpdates(raws)
		if !a.handleBatch(ctx, me, updates) {
			// ctx ended or the pipeline stopped before the batch was
			// handed over: it stays unconfirmed and comes again next time.
			return nil
		}
		if next > offset {
			offset = next
		}
	}
	return nil
}

// handleBatch accepts every update of a batch (retrying with backoff until
// it succeeds), then hands them to the pipeline in order. It reports false
// when it stopped first: ctx ended, or the pipeline refused new turns.
func (a *Adapter) handleBatch(ctx context.Context, me Me, updates []*models.Update) bool {
	items := make([]item, len(updates))
	for i, u := range updates {
		items[i] = a.prepare(u, me)
	}
	done := make([]bool, len(items))
	for attempt := 0; ; attempt++ {
		err := a.acceptPending(ctx, items, done)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return false
		}
		wait := a.backoff(attempt)
		a.setHealth(fmt.Errorf("storing incoming messages fails (%d attempts); no update is received meanwhile: %w", attempt+1, err))
		a.log.Error("storing incoming messages failed; they stay unconfirmed and are retried",
			"retry_in", wait.Round(time.Millisecond), "err", err)
		if !sleep(ctx, wait) {
			return false
		}
	}
	a.setHealth(nil)
	a.lastPoll.Store(a.now().UnixNano()) // the time spent storing was not a stall of polling
	for _, it := range items {
		a.migrate(ctx, it)
		if err := a.dispatch(ctx, it); err != nil {
			a.log.Warn("the pipeline stopped; leaving updates unconfirmed for the next start", "err", err)
			return false
		}
	}
	return true
}

// decodeUpdates decodes a batch. An update that does not decode is logged
// and skipped (its id still counts, so it cannot block the bot). next is the
// offset that confirms the batch (0 when it is empty).
func (a *Adapter) decodeUpdates(raws []json.RawMessage) (updates []*models.Update, next int64) {
	for _, raw := range raws {
		var id struct {
			ID int64 `json:"update_id"`
		}
		_ = json.Unmarshal(raw, &id)
		if id.ID+1 > next {
			next = id.ID + 1
		}
		u, err := decodeUpdate(raw)
		if u == nil {
			a.log.Warn("skipping an update that does not decode", "update_id", id.ID, "err", err)
			continue
		}
		if err != nil {
			a.log.Warn("an update did not fully decode; using its text, chat and sender", "update_id", id.ID, "err", err)
		}
		updates = append(updates, u)
	}
	return updates, next
}

// decodeUpdate decodes one update. When the library's models refuse it (a
// field variant newer than the library, such as a new forward_origin type),
// the message is decoded again with only the fields the bot uses (minimal),
// so its text is still answered; err is then the models' error, for the log.
// u is nil only when neither works.
func decodeUpdate(raw []byte) (u *models.Update, err error) {
	u, err = decodeFull(raw)
	if err == nil {
		return u, nil
	}
	if m, ok := minimalUpdate(raw); ok {
		return m, err
	}
	return nil, err
}

// decodeFull decodes one update with the library's models, turning a panic
// in a model's decoder into an error.
func decodeFull(raw []byte) (u *models.Update, err error) {
	defer func() {
		if r := recover(); r != nil {
			u, err = nil, fmt.Errorf("decoding an update panicked: %v", r)
		}
	}()
	u = new(models.Update)
	if err := json.Unmarshal(raw, u); err != nil {
		return nil, err
	}
	return u, nil
}

// getUpdates asks for the updates from offset on, waiting up to PollTimeout
// for some to arrive. The offset confirms every update before it.
func (a *Adapter) getUpdates(ctx context.Context, offset int64) ([]json.RawMessage, error) {
	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	allowed, _ := json.Marshal(allowedUpdates)
	fields := [][2]string{
		{"timeout", strconv.Itoa(int(a.opts.PollTimeout / time.Second))},
		{"limit", strconv.Itoa(pollLimit)},
		{"allowed_updates", string(allowed)},
	}
	if offset > 0 {
		fields = append(fields, [2]string{"offset", strconv.FormatInt(offset, 10)})
	}
	for _, f := range fields {
		if err := form.WriteField(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	if err := form.Close(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.PollTimeout+a.callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.opts.APIURL+"/bot"+a.opts.Token+"/getUpdates", &body)
	if err != nil {
		return nil, a.redact(err)
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	resp, err := a.poller.Do(req)
	if err != nil {
		return nil, fmt.Errorf("getUpdates: %w", a.redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("getUpdates: reading the answer: %w", a.redact(err))
	}
	var ans struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		if resp.StatusCode != http.StatusOK {
			return nil, &apiError{Code: resp.StatusCode, Description: http.StatusText(resp.StatusCode)}
		}
		return nil, fmt.Errorf("getUpdates: the answer is not JSON: %w", err)
	}
	if !ans.OK {
		code := ans.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return nil, &apiError{Code: code, Description: ans.Description, RetryAfter: ans.Parameters.RetryAfter}
	}
	return ans.Result, nil
}

// redact removes the token from an error about a request to the Bot API
// (its URL holds the token).
func (a *Adapter) redact(err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = strings.ReplaceAll(ue.URL, a.opts.Token, "<token>")
	}
	if strings.Contains(err.Error(), a.opts.Token) {
		return errors.New(strings.ReplaceAll(err.Error(), a.opts.Token, "<token>"))
	}
	return err
}

// minimalMessage is the part of a message the bot uses, decoded without the
// library's models (whose decoders refuse variants they do not know).
type minimalMessage struct {
	ID              int                    `json:"message_id"`
	ThreadID        int                    `json:"message_thread_id"`
	IsTopicMessage  bool                   `json:"is_topic_message"`
	Date            int                    `json:"date"`
	Chat            models.Chat            `json:"chat"`
	From            *models.User           `json:"from"`
	SenderChat      *models.Chat           `json:"sender_chat"`
	Text            string                 `json:"text"`
	Caption         string                 `json:"caption"`
	Entities        []models.MessageEntity `json:"entities"`
	CaptionEntities []models.MessageEntity `json:"caption_entities"`
	MediaGroupID    string                 `json:"media_group_id"`
	ReplyTo         *struct {
		ID                int                       `json:"message_id"`
		From              *models.User              `json:"from"`
		ForumTopicCreated *models.ForumTopicCreated `json:"forum_topic_created"`
	} `json:"reply_to_message"`
}

// minimalUpdate decodes the message of an update the models refused: the
// chat, the sender, the text or caption with their entities, the message
// replied to and the topic; or the button press (id, presser, data, chat).
// ok is false when the update holds neither in a form that decodes so.
func minimalUpdate(raw []byte) (*models.Update, bool) {
	var v struct {
		ID       int64           `json:"update_id"`
		Message  *minimalMessage `json:"message"`
		Callback *struct {
			ID      string          `json:"id"`
			From    models.User     `json:"from"`
			Data    string          `json:"data"`
			Message *minimalMessage `json:"message"`
		} `json:"callback_query"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	if q := v.Callback; q != nil && q.ID != "" {
		// A button press: answered in any case (the spinner), handled when
		// its chat is known.
		cq := &models.CallbackQuery{ID: q.ID, From: q.From, Data: q.Data}
		if m := q.Message; m != nil && m.Chat.ID != 0 {
			cq.Message = models.MaybeInaccessibleMessage{Type: models.MaybeInaccessibleMessageTypeMessage,
				Message: &models.Message{ID: m.ID, Date: m.Date, Chat: m.Chat, MessageThreadID: m.ThreadID, IsTopicMessage: m.IsTopicMessage}}
		}
		return &models.Update{ID: v.ID, CallbackQuery: cq}, true
	}
	if v.Message == nil || v.Message.Chat.ID == 0 {
		return nil, false
	}
	mm := v.Message
	m := &models.Message{
		ID: mm.ID, MessageThreadID: mm.ThreadID, IsTopicMessage: mm.IsTopicMessage, Date: mm.Date,
		Chat: mm.Chat, From: mm.From, SenderChat: mm.SenderChat, Text: mm.Text, Caption: mm.Caption,
		Entities: mm.Entities, CaptionEntities: mm.CaptionEntities, MediaGroupID: mm.MediaGroupID,
	}
	if r := mm.ReplyTo; r != nil {
		m.ReplyToMessage = &models.Message{ID: r.ID, From: r.From, Chat: mm.Chat, ForumTopicCreated: r.ForumTopicCreated}
	}
	return &models.Update{ID: v.ID, Message: m}, true
}
