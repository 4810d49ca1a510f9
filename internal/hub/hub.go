// Package hub is the one place that owns media. Each on-demand asset and each live
// channel is a store that every transport reads: HTTP pull serves from it, push
// transports subscribe to it. Sources fill it; they know nothing of transports.
package hub

import (
	"fmt"
	"sort"
	"sync"

	"github.com/streambed/streambed/internal/media"
)

// Hub holds the assets and channels being served.
type Hub struct {
	mu       sync.RWMutex
	assets   map[string]*Asset
	channels map[string]*Channel
}

// New returns an empty hub.
func New() *Hub {
	return &Hub{assets: map[string]*Asset{}, channels: map[string]*Channel{}}
}

// AddAsset registers an on-demand asset, replacing one of the same name.
func (h *Hub) AddAsset(a *Asset) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.assets[a.Info().Name] = a
}

// AddChannel registers a live channel, replacing one of the same name.
func (h *Hub) AddChannel(c *Channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.channels[c.Info().Name] = c
}

// Asset returns the asset called name.
func (h *Hub) Asset(name string) (*Asset, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if a, ok := h.assets[name]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no asset %q: %w", name, media.ErrNotFound)
}

// Channel returns the live channel called name.
func (h *Hub) Channel(name string) (*Channel, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if c, ok := h.channels[name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("no channel %q: %w", name, media.ErrNotFound)
}

// Assets lists the assets by name.
func (h *Hub) Assets() []*Asset {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*Asset, 0, len(h.assets))
	for _, a := range h.assets {
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
	for _, c := range h.channels {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Info().Name < out[j].Info().Name })
	return out
}
