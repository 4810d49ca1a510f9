package hub

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/media"
)

// archive writes a live channel's segments to disk as they complete, laid out like a
// packaged asset ({track}/init.mp4, {track}/{n}.m4s), so a recording outlives the DVR
// window. It is a reader of the channel with a goroutine of its own: the channel hands
// it completed segments through a bounded queue and never waits for the disk, so a
// slow or full disk never delays a source or a viewer. A failed write (a full disk)
// or a segment dropped from a full queue is counted and remembered.
type archive struct {
	dir   string
	queue chan archived

	mu      sync.Mutex
	written int
	failed  int
	lastErr error
}

type archived struct {
	track string
	seg   *media.Segment // nil: an init segment in init
	init  []byte
}

// archiveQueue is how many completed segments may wait for the disk.
const archiveQueue = 256

// ArchiveStats says what the archive wrote and what failed.
type ArchiveStats struct {
	Dir     string
	Written int   // segments written
	Failed  int   // segments that could not be written, or were dropped
	LastErr error // the newest failure
}

func newArchive(dir string, inits map[string][]byte) (*archive, error) {
	a := &archive{dir: dir, queue: make(chan archived, archiveQueue)}
	for track, b := range inits {
		if len(b) == 0 {
			continue
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, track, "init.mp4"), b, 0o644); err != nil {
			return nil, fmt.Errorf("archive %s: %w", dir, err)
		}
	}
	return a, nil
}

// offer queues a completed segment for writing, or counts it lost when the queue is full.
func (a *archive) offer(track string, s *media.Segment) { a.put(archived{track: track, seg: s}) }

func (a *archive) saveInit(track string, b []byte) { a.put(archived{track: track, init: b}) }

func (a *archive) put(w archived) {
	select {
	case a.queue <- w:
	default:
		a.fail(fmt.Errorf("archive %s: %d segments already wait for the disk; track %s dropped one", a.dir, archiveQueue, w.track))
	}
}

// run writes queued segments until ctx ends, then writes what is still queued.
func (a *archive) run(ctx context.Context) {
	for {
		select {
		case w := <-a.queue:
			a.write(w)
		case <-ctx.Done():
			for {
				select {
				case w := <-a.queue:
					a.write(w)
				default:
					return
				}
			}
		}
	}
}

func (a *archive) write(w archived) {
	if w.seg == nil {
		if err := fsutil.WriteFileAtomic(filepath.Join(a.dir, w.track, "init.mp4"), w.init, 0o644); err != nil {
			a.fail(err)
		}
		return
	}
	path := filepath.Join(a.dir, w.track, fmt.Sprintf("%d.m4s", w.seg.Number))
	if err := fsutil.WriteFileAtomic(path, w.seg.Bytes(), 0o644); err != nil {
		a.fail(err)
		return
	}
	a.mu.Lock()
	a.written++
	a.mu.Unlock()
}

func (a *archive) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failed++
	a.lastErr = err
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
