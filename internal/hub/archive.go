package hub

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/media"
)

// archive writes a live channel's segments to disk as they enter the window, laid out
// like a packaged asset ({track}/init.mp4, {track}/{n}.m4s), so a recording outlives
// the DVR window. Writes are atomic; a failed write (a full disk) is counted and
// remembered, and serving from memory goes on: the archive never blocks viewers.
type archive struct {
	dir string

	mu      sync.Mutex
	written int
	failed  int
	lastErr error
}

// ArchiveStats says what the archive wrote and what failed.
type ArchiveStats struct {
	Dir     string
	Written int   // segments written
	Failed  int   // segments that could not be written
	LastErr error // the newest failure
}

func newArchive(dir string, inits map[string][]byte) (*archive, error) {
	a := &archive{dir: dir}
	for track, b := range inits {
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, track, "init.mp4"), b, 0o644); err != nil {
			return nil, fmt.Errorf("archive %s: %w", dir, err)
		}
	}
	return a, nil
}

func (a *archive) save(track string, s *media.Segment) {
	path := filepath.Join(a.dir, track, fmt.Sprintf("%d.m4s", s.Number))
	err := fsutil.WriteFileAtomic(path, s.Bytes(), 0o644)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failed++
		a.lastErr = err
		return
	}
	a.written++
}

// Archive reports the channel's archive, if it has one.
func (c *Channel) Archive() (ArchiveStats, bool) {
	if c.archive == nil {
		return ArchiveStats{}, false
	}
	a := c.archive
	a.mu.Lock()
	defer a.mu.Unlock()
	return ArchiveStats{Dir: a.dir, Written: a.written, Failed: a.failed, LastErr: a.lastErr}, true
}
