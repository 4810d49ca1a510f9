package hub

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// SegmentCache keeps packaged segment files in memory up to a byte budget, shared by
// every asset of a hub. Segments of a packaged asset never change, so there is nothing
// to invalidate; segments beyond the budget are served from disk. Holding them saves
// the open/fstat/close of every request, the way nginx's open_file_cache does.
type SegmentCache struct {
	budget int64
	used   atomic.Int64
	m      sync.Map // path → *CachedFile
}

// CachedFile is a segment file's bytes with the validators HTTP needs.
type CachedFile struct {
	Data    []byte
	ModUnix int64
	ETag    string
}

// NewSegmentCache returns a cache that holds at most budget bytes (0 disables it).
func NewSegmentCache(budget int64) *SegmentCache { return &SegmentCache{budget: budget} }

// Get returns the cached file at path, loading it if the budget allows; ok is false
// when the file is to be served from disk.
func (c *SegmentCache) Get(path string) (*CachedFile, bool) {
	if c == nil || c.budget <= 0 {
		return nil, false
	}
	if v, ok := c.m.Load(path); ok {
		return v.(*CachedFile), true
	}
	fi, err := os.Stat(path)
	if err != nil || c.used.Load()+fi.Size() > c.budget {
		return nil, false
	}
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) != fi.Size() {
		return nil, false
	}
	f := &CachedFile{Data: b, ModUnix: fi.ModTime().Unix(), ETag: fmt.Sprintf(`"%x-%x"`, fi.ModTime().Unix(), fi.Size())}
	if v, loaded := c.m.LoadOrStore(path, f); loaded {
		return v.(*CachedFile), true
	}
	c.used.Add(int64(len(b)))
	return f, true
}

// Used is how many bytes the cache holds.
func (c *SegmentCache) Used() int64 { return c.used.Load() }
