package pars

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// maxSizes bounds the cache of sizes learnt by HEAD.
const maxSizes = 4096

// size returns the size of segment u: learnt earlier, from the sidecar index beside
// it, else by HEAD on lane l; -1 when the server does not say.
func (c *Client) size(ctx context.Context, l *lane, u string) (int64, error) {
	c.mu.Lock()
	s, ok := c.sizes[u]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	ix, file, ok := indexURL(u)
	if ok && !c.opts.NoIndex {
		sizes, err := c.index(ctx, l, ix)
		if err != nil {
			c.opts.Logger.Debug("segment index unavailable; using HEAD", "url", ix, "err", err)
		}
		if s, ok := sizes[file]; ok {
			return s, nil
		}
	}
	return c.head(ctx, l, u)
}

// index returns the sizes listed by the index at ix, fetching it once. A missing index
// (404, or not our format) is remembered as none; other failures are retried next time.
func (c *Client) index(ctx context.Context, l *lane, ix string) (map[string]int64, error) {
	c.mu.Lock()
	sizes, known := c.indexes[ix]
	c.mu.Unlock()
	if known {
		return sizes, nil
	}
	resp, err := l.c.Fetch(ctx, player.SegmentRequest{Kind: player.RequestManifest, URL: ix, KeepBody: true})
	if err != nil {
		if errors.Is(err, media.ErrNotFound) || errors.Is(err, media.ErrBadRequest) {
			c.mu.Lock()
			c.indexes[ix] = nil
			c.mu.Unlock()
		}
		return nil, err
	}
	var doc Index
	if err := json.Unmarshal(resp.Body, &doc); err != nil || doc.Segments == nil {
		c.mu.Lock()
		c.indexes[ix] = nil
		c.mu.Unlock()
		return nil, fmt.Errorf("%s is not a segment index: %v", ix, err)
	}
	sizes = doc.sizes()
	c.mu.Lock()
	c.indexes[ix] = sizes
	c.mu.Unlock()
	return sizes, nil
}

// head asks the server for the size of u.
func (c *Client) head(ctx context.Context, l *lane, u string) (int64, error) {
	c.heads.Add(1)
	x, err := l.open(ctx, http.MethodHead, u, nil, &c.opts.ConnOptions)
	if err != nil {
		return 0, err
	}
	defer x.close()
	io.Copy(io.Discard, x.resp.Body)
	switch x.resp.StatusCode {
	case http.StatusOK:
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return -1, nil // no HEAD here: fetch whole
	default:
		return 0, errors.Unwrap(statusError(x.resp))
	}
	if x.resp.Header.Get("Accept-Ranges") == "none" {
		return -1, nil
	}
	size := x.resp.ContentLength
	if size >= 0 {
		c.learnSize(u, size)
	}
	return size, nil
}

// learnSize remembers the size of u (from HEAD, or a Content-Range that disagreed
// with the index); it takes precedence over the index.
func (c *Client) learnSize(u string, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sizes) >= maxSizes {
		clear(c.sizes)
	}
	c.sizes[u] = size
}

// forgetSize drops what the client believes about u's size (after a 416).
func (c *Client) forgetSize(u string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sizes, u)
	if ix, _, ok := indexURL(u); ok {
		delete(c.indexes, ix)
	}
}

// sampleLog keeps the last throughput samples.
type sampleLog struct {
	mu sync.Mutex
	s  []Sample
}

const maxSamples = 1024

func (l *sampleLog) add(s Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.s) >= maxSamples {
		l.s = append(l.s[:0], l.s[len(l.s)/2:]...)
	}
	l.s = append(l.s, s)
}

func (l *sampleLog) all() []Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Sample(nil), l.s...)
}
