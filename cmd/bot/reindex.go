package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/recallbot/recall/app"
	"github.com/recallbot/recall/config"
	"github.com/recallbot/recall/embed"
)

// runReindex embeds every stored message that has no vector by
// memory.embeddings.model yet, with a progress bar on w. Stopped midway
// (Ctrl-C, a kill), it keeps what it stored: the next run goes on from
// there.
func runReindex(ctx context.Context, cfg config.Config, args []string, w io.Writer) (err error) {
	if len(args) > 0 {
		return usageError("usage: bot reindex (no arguments: it embeds what memory.embeddings.model has not embedded yet)")
	}
	emb, err := app.NewEmbedder(cfg)
	if err != nil {
		return err
	}
	if emb == nil {
		return fmt.Errorf("memory.embeddings.model is not set: set it (and memory.embeddings.base_url if the endpoint is not llm.base_url) to embed the archive")
	}
	s, err := openStore(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	bar := reindexBar{w: w, model: emb.Model()}
	n, err := embed.Reindex(ctx, s.Embeddings(), s.JSON(), emb, cfg.Memory.Embeddings.Batch, bar.show)
	bar.end()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped after embedding %d texts; run bot reindex again to go on from there", n)
		}
		return fmt.Errorf("embedding the archive (%d texts embedded and kept; run bot reindex again to go on): %w", n, err)
	}
	fmt.Fprintf(w, "done: every message is embedded by %s (%d texts sent to the endpoint; identical texts once)\n", emb.Model(), n)
	return nil
}

// reindexBar draws "[#####-----]  42%  4,210 of 10,000 messages" on one
// line, redrawn at most ten times a second.
type reindexBar struct {
	w     io.Writer
	model string
	last  time.Time
	drawn bool
}

func (p *reindexBar) show(done, total int64) {
	if done < total && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	const width = 30
	fill, pct := width, int64(100)
	if total > 0 {
		fill, pct = int(done*width/total), done*100/total
	}
	fmt.Fprintf(p.w, "\rembedding with %s [%s%s] %3d%%  %d of %d messages", p.model, strings.Repeat("#", fill), strings.Repeat("-", width-fill), pct, done, total)
	p.drawn = true
}

func (p *reindexBar) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
