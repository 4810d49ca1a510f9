// Package hub is the one place that owns media. Each on-demand asset and each live
// channel is a store that every transport reads: HTTP pull serves from it, push
// transports subscribe to it. Sources feed it; they know nothing of transports.
//
// The hub is also the registry of live channels: channels are created and removed at
// run time, each with its own context, under which the hub runs and supervises the
// channel's goroutines (its source and its archive).
package hub

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Source feeds a channel (SetInit, AppendChunk, EndSegment) until ctx ends. A looped
// asset paces its chunks in; an encoder's ingest pushes them as they arrive.
type Source interface {
	Run(ctx context.Context, c *Channel) error
}

// Hub holds the assets and channels being served.
type Hub struct {
	log *slog.Logger

	mu       sync.RWMutex
	assets   atomic.Pointer[map[string]*Asset] // copied on change: read without the lock, on every segment request
	channels map[string]*running
	wg       sync.WaitGroup
}

// running is a registered channel and the lifetime of its goroutines.
type running struct {
	c      *Channel
	cancel context.CancelFunc
	done   chan struct{} // closed when its goroutines have stopped
}

// Option configures New.
type Option func(*Hub)

// WithLogger sets where the hub reports a channel's source failing or restarting.
func WithLogger(l *slog.Logger) Option { return func(h *Hub) { h.log = l } }

// New returns an empty hub.
func New(opts ...Option) *Hub {
	h := &Hub{log: slog.New(slog.DiscardHandler), channels: map[string]*running{}}
	h.assets.Store(&map[string]*Asset{})
	for _, o := range opts {
		o(h)
	}
	return h
}

// AddAsset registers an on-demand asset, replacing one of the same name.
func (h *Hub) AddAsset(a *Asset) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := maps.Clone(*h.assets.Load())
	m[a.Info().Name] = a
	h.assets.Store(&m)
}

// AddChannel registers c and starts its goroutines under a context of its own,
// derived from ctx: its source (nil: the channel is fed from outside) and its
// archive. A source that fails is restarted after a pause that grows to 30 s. The
// goroutines stop when the channel is removed or ctx ends. A name can be registered once.
func (h *Hub) AddChannel(ctx context.Context, c *Channel, src Source) error {
	name := c.Info().Name
	cctx, cancel := context.WithCancel(ctx)
	r := &running{c: c, cancel: cancel, done: make(chan struct{})}
	h.mu.Lock()
	if _, taken := h.channels[name]; taken {
		h.mu.Unlock()
		cancel()
		return fmt.Errorf("channel %q exists already: %w", name, media.ErrBadRequest)
	}
	h.channels[name] = r
	h.mu.Unlock()

	var wg sync.WaitGroup
	if c.archive != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.archive.run(cctx) }()
	}
	if src != nil {
		wg.Add(1)
		go func() { defer wg.Done(); h.supervise(cctx, c, src) }()
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		wg.Wait()
		close(r.done)
	}()
	return nil
}

// supervise runs src until ctx ends, restarting it when it fails.
func (h *Hub) supervise(ctx context.Context, c *Channel, src Source) {
	pause := time.Second
	for {
		err := src.Run(ctx, c)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			return // the source finished: the stream is over
		}
		h.log.Error("channel source failed; restarting", "channel", c.Info().Name, "err", err, "in", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// RemoveChannel stops a channel's goroutines, waits for them, ends its stream (its
// subscribers are closed) and unregisters it.
func (h *Hub) RemoveChannel(name string) error {
	h.mu.Lock()
	r, ok := h.channels[name]
	if ok {
		delete(h.channels, name)
	}
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("no channel %q: %w", name, media.ErrNotFound)
	}
	r.cancel()
	<-r.done
	r.c.EndStream()
	return nil
}

// Close stops every channel's goroutines and waits for them (graceful shutdown).
func (h *Hub) Close() {
	h.mu.RLock()
	for _, r := range h.channels {
		r.cancel()
	}
	h.mu.RUnlock()
	h.wg.Wait()
}

// Asset returns the asset called name.
func (h *Hub) Asset(name string) (*Asset, error) {
	if a, ok := (*h.assets.Load())[name]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no asset %q: %w", name, media.ErrNotFound)
}

// Channel returns the live channel called name.
func (h *Hub) Channel(name string) (*Channel, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if r, ok := h.channels[name]; ok {
		return r.c, nil
	}
	return nil, fmt.Errorf("no channel %q: %w", name, media.ErrNotFound)
}

// Stream returns the channel (live) or asset called name, as the one interface
// every transport reads.
func (h *Hub) Stream(name string, live bool) (Stream, error) {
	if live {
		if c, err := h.Channel(name); err == nil {
			return c, nil
		} else {
			return nil, err
		}
	}
	if a, err := h.Asset(name); err == nil {
		return a, nil
	} else {
		return nil, err
	}
}

// Assets lists the assets by name.
func (h *Hub) Assets() []*Asset {
	assets := *h.assets.Load()
	out := make([]*Asset, 0, len(assets))
	for _, a := range assets {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Info().Name < out[j].Info().Name })
	return out
}

// Channels lists the live channels by name.
func (h *Hub) Channels() []*Channel {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*Channel, 0, len(h.channels))
	for _, r := range h.channels {
		out = append(out, r.c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Info().Name < out[j].Info().Name })
	return out
}
