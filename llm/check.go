package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ErrUnknownModel means the server lists its models and the configured one
// is not among them.
var ErrUnknownModel = errors.New("llm: model not offered by the server")

// CheckTimeout bounds the start-up check.
const CheckTimeout = 10 * time.Second

// Check asks the server once, without retrying, whether Model can be used:
// GET /models, and when the server has no such endpoint a one-token chat.
// It returns nil when the server answers and accepts the key, and otherwise
// an error that says what the operator should fix (it matches ErrAuth,
// ErrUnreachable, ErrTimeout, ErrUnknownModel, *StatusError…). It does not
// count towards Health.
func (c *Client) Check(ctx context.Context) error {
	if c.confErr != nil {
		return c.confErr
	}
	info := &attemptInfo{}
	actx, cancel := context.WithTimeoutCause(ctx, c.timeout, fmt.Errorf("%w: no answer within %s", errAttemptTimeout, c.timeout))
	defer cancel()
	list, err := c.api.ListModels(withAttemptInfo(actx, info))
	if err != nil {
		f := c.classify(ctx, actx, err, info)
		if f.kind == kindStatus && (f.status == http.StatusNotFound || f.status == http.StatusMethodNotAllowed) {
			return c.explain(c.probe(ctx))
		}
		return c.explain(c.checkFailure(ctx, f))
	}
	if len(list.Models) == 0 {
		return nil
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
		if m.ID == c.model || m.ID == c.model+":latest" { // Ollama's implicit tag
			return nil
		}
	}
	slices.Sort(ids)
	offered := strings.Join(ids[:min(len(ids), 8)], ", ")
	if len(ids) > 8 {
		offered += fmt.Sprintf(" and %d more", len(ids)-8)
	}
	return fmt.Errorf("%w: the model server at %s does not offer model %q (it offers %s): set llm.model to one of them",
		ErrUnknownModel, c.baseURL, c.model, c.redact(offered))
}

// probe is a one-token chat, for servers without GET /models. A refusal of
// the request itself (400: the server understood it) counts as an answer.
func (c *Client) probe(ctx context.Context) error {
	req := c.request(c.model, c.temperature, []Message{{Role: RoleUser, Content: "ping"}}, false)
	if req.MaxCompletionTokens > 0 {
		req.MaxCompletionTokens = 1
	} else {
		//lint:ignore SA1019 max_tokens is what other OpenAI-compatible servers (Ollama, vLLM, llama.cpp) know
		req.MaxTokens = 1
	}
	f, _ := c.attemptOnce(ctx, false, func(actx context.Context, _ *attemptInfo, _ func(bool)) error {
		_, err := c.api.CreateChatCompletion(actx, req)
		return err
	})
	if f == nil || (f.kind == kindStatus && f.status == http.StatusBadRequest) {
		return nil
	}
	return c.checkFailure(ctx, f)
}

func (c *Client) checkFailure(ctx context.Context, f *failure) error {
	if f.kind == kindCanceled {
		return c.ctxError(ctx)
	}
	return f.final(1)
}

// explain adds to a failed check what the operator should do.
func (c *Client) explain(err error) error {
	var st *StatusError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrAuth):
		return fmt.Errorf("the model server at %s refused the API key: set llm.api_key (or RECALL_LLM_API_KEY) to a key it accepts: %w", c.baseURL, err)
	case errors.Is(err, ErrUnreachable):
		return fmt.Errorf("cannot reach the model server at %s: check llm.base_url (or RECALL_LLM_BASE_URL) and that the server runs: %w", c.baseURL, err)
	case errors.Is(err, ErrTimeout):
		return fmt.Errorf("the model server at %s did not answer in time: check llm.base_url and the server: %w", c.baseURL, err)
	case errors.As(err, &st) && st.Code == http.StatusNotFound:
		return fmt.Errorf("the model server at %s answered 404 for model %q: check llm.model, and llm.base_url (most servers' URL ends in /v1): %w", c.baseURL, c.model, err)
	}
	return fmt.Errorf("checking the model server at %s: %w", c.baseURL, err)
}

// CheckAtStart runs Check within CheckTimeout and logs the outcome: an
// error, with the fix, when the model is not usable (Health then reports
// it until a call succeeds), an info line when it is. The error is
// returned too; the bot starts anyway (commands work without the model).
func (c *Client) CheckAtStart(ctx context.Context, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	err := c.Check(ctx)
	switch {
	case err == nil:
		log.Info("the model server answers", "base_url", c.baseURL, "model", c.model)
	case errors.Is(err, ErrUnknownModel):
		log.Error("the configured model is not offered by the model server; answers will fail", "err", err)
		c.health.fail(err)
	default:
		log.Error("the language model is not usable; answers will fail until this is fixed", "err", err)
		c.health.fail(err)
	}
	return err
}
