package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/media"
)

// archive writes a live channel's segments to disk as they complete, so a recording
// outlives the DVR window and the channel outlives a restart. It is a reader of the
// channel with a goroutine of its own: the channel hands it completed segments
// through a bounded queue and never waits for the disk, so a slow disk never delays
// a source or a viewer.
//
// Layout, under the archive folder:
//
//	tracks.json                    the tracks and the timeline anchor (for a restart)
//	{track}/init.mp4               each track's CMAF header
//	{track}/{n}.m4s                segments, when there is no grouping
//	{G}/{track}/init.mp4           with grouping: group G holds the segments whose
//	{G}/{track}/{n}.m4s            media time starts in [G, G+group) seconds
//	…/{track}/index.txt            one line per segment written: "n start duration
//	                               size" (track timescale), appended after the
//	                               segment's file is in place
//
// Every file is written atomically (a temporary file renamed), so a crash or a full
// disk leaves no partial segment. Groups whose media is older than the archive
// length behind the newest segment are removed whole.
type archive struct {
	dir   string
	group time.Duration // 0: no grouping
	keep  time.Duration // 0: keep everything
	queue chan archived
	now   Clock

	mu        sync.Mutex
	written   int
	failed    int
	pruned    int
	lastErr   error
	full      bool      // the disk is full: new media is refused until a write succeeds
	fullProbe time.Time // when full was last checked
	inits     map[string][]byte
	groups    map[int64]map[string]bool // group start (s) → tracks whose init is in it
}

type archived struct {
	track     string
	timescale uint32
	seg       *media.Segment // nil: init, or tracks
	init      []byte
	tracks    []byte // tracks.json
}

// archiveQueue is how many completed segments may wait for the disk.
const archiveQueue = 256

// DefaultArchiveGroup groups an archive that is pruned but given no group length.
const DefaultArchiveGroup = time.Minute

// ErrDiskFull is media refused because the archive's disk is full: 507.
var ErrDiskFull = errors.New("the archive's disk is full")

// ArchiveStats says what the archive wrote and what failed.
type ArchiveStats struct {
	Dir     string
	Written int   // segments written
	Failed  int   // segments that could not be written, or were dropped
	Pruned  int   // groups removed for being older than the archive length
	Full    bool  // the disk is full: new media is refused
	LastErr error // the newest failure
}

// ArchiveConfig configures a channel's archive.
type ArchiveConfig struct {
	Dir string
	// Group groups segments in folders of this much media time; Length removes the
	// groups older than this behind the newest segment. 0: no grouping, keep all
	// (with Length set and Group 0, groups of DefaultArchiveGroup).
	Group, Length time.Duration
}

func newArchive(cfg ArchiveConfig, inits map[string][]byte, now Clock) (*archive, error) {
	if cfg.Length > 0 && cfg.Group == 0 {
		cfg.Group = DefaultArchiveGroup
	}
	a := &archive{dir: cfg.Dir, group: cfg.Group, keep: cfg.Length, queue: make(chan archived, archiveQueue), now: now,
		inits: map[string][]byte{}, groups: map[int64]map[string]bool{}}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive %s: %w", cfg.Dir, err)
	}
	for track, b := range inits {
		if len(b) == 0 {
			continue
		}
		a.inits[track] = b
		if err := fsutil.WriteFileAtomic(filepath.Join(cfg.Dir, track, "init.mp4"), b, 0o644); err != nil {
			return nil, fmt.Errorf("archive %s: %w", cfg.Dir, err)
		}
	}
	if a.group > 0 {
		entries, _ := os.ReadDir(cfg.Dir)
		for _, e := range entries {
			if g, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && e.IsDir() {
				a.groups[g] = map[string]bool{}
			}
		}
	}
	return a, nil
}

// offer queues a completed segment for writing, or counts it lost when the queue is full.
func (a *archive) offer(track string, timescale uint32, s *media.Segment) {
	a.put(archived{track: track, timescale: timescale, seg: s})
}

func (a *archive) saveInit(track string, b []byte) { a.put(archived{track: track, init: b}) }

func (a *archive) saveTracks(b []byte) { a.put(archived{tracks: b}) }

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
	switch {
	case w.tracks != nil:
		if err := fsutil.WriteFileAtomic(filepath.Join(a.dir, "tracks.json"), w.tracks, 0o644); err != nil {
			a.fail(err)
		}
		return
	case w.seg == nil:
		a.mu.Lock()
		a.inits[w.track] = w.init
		for _, tracks := range a.groups {
			delete(tracks, w.track) // the next segment of each group writes the new header
		}
		a.mu.Unlock()
		if err := fsutil.WriteFileAtomic(filepath.Join(a.dir, w.track, "init.mp4"), w.init, 0o644); err != nil {
			a.fail(err)
		}
		return
	}
	dir := filepath.Join(a.dir, w.track)
	var g int64
	if a.group > 0 && w.timescale > 0 {
		start := time.Duration(float64(w.seg.Start) / float64(w.timescale) * float64(time.Second))
		g = int64(start/a.group) * int64(a.group/time.Second)
		dir = filepath.Join(a.dir, strconv.FormatInt(g, 10), w.track)
		if err := a.groupInit(g, w.track, dir); err != nil {
			a.fail(err)
			return
		}
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, fmt.Sprintf("%d.m4s", w.seg.Number)), w.seg.Bytes(), 0o644); err != nil {
		a.fail(err)
		return
	}
	line := fmt.Sprintf("%d %d %d %d\n", w.seg.Number, w.seg.Start, w.seg.Duration, w.seg.Size)
	if w.seg.Period > 0 {
		line = fmt.Sprintf("%d %d %d %d p%d\n", w.seg.Number, w.seg.Start, w.seg.Duration, w.seg.Size, w.seg.Period)
	}
	if err := appendLine(filepath.Join(dir, "index.txt"), line); err != nil {
		a.fail(err)
		return
	}
	a.mu.Lock()
	a.written++
	if a.full {
		a.full = false
		a.lastErr = nil
	}
	a.mu.Unlock()
	if a.keep > 0 && w.timescale > 0 {
		end := time.Duration(float64(w.seg.Start+w.seg.Duration) / float64(w.timescale) * float64(time.Second))
		a.prune(end - a.keep)
	}
}

// groupInit puts the track's header in group g's folder the first time g gets one of
// its segments, so that each group is a self-contained recording.
func (a *archive) groupInit(g int64, track, dir string) error {
	a.mu.Lock()
	tracks, ok := a.groups[g]
	if !ok {
		tracks = map[string]bool{}
		a.groups[g] = tracks
	}
	have, init := tracks[track], a.inits[track]
	a.mu.Unlock()
	if have || init == nil {
		return nil
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "init.mp4"), init, 0o644); err != nil {
		return err
	}
	a.mu.Lock()
	tracks[track] = true
	a.mu.Unlock()
	return nil
}

// prune removes the groups that end before media time cut.
func (a *archive) prune(cut time.Duration) {
	a.mu.Lock()
	var old []int64
	for g := range a.groups {
		if time.Duration(g)*time.Second+a.group <= cut {
			old = append(old, g)
		}
	}
	a.mu.Unlock()
	for _, g := range old {
		if err := os.RemoveAll(filepath.Join(a.dir, strconv.FormatInt(g, 10))); err != nil {
			a.fail(err)
			continue
		}
		a.mu.Lock()
		delete(a.groups, g)
		a.pruned++
		a.mu.Unlock()
	}
}

// appendLine appends one line and syncs it: a line is there only for a segment
// whose file is.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (a *archive) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failed++
	a.lastErr = err
	if isDiskFull(err) {
		a.full = true
	}
}

func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// refusing says whether new media must be refused: the disk was full, and a small
// probe (at most once a second) still cannot be written.
func (a *archive) refusing() bool {
	a.mu.Lock()
	if !a.full {
		a.mu.Unlock()
		return false
	}
	now := a.now()
	if now.Sub(a.fullProbe) < time.Second {
		a.mu.Unlock()
		return true
	}
	a.fullProbe = now
	a.mu.Unlock()
	probe := filepath.Join(a.dir, ".space-probe")
	err := fsutil.WriteFileAtomic(probe, make([]byte, 64<<10), 0o644)
	os.Remove(probe)
	if err != nil {
		return true
	}
	a.mu.Lock()
	a.full = false
	a.mu.Unlock()
	return false
}

// Archive reports the channel's archive, if it has one.
func (c *Channel) Archive() (ArchiveStats, bool) {
	if c.archive == nil {
		return ArchiveStats{}, false
	}
	a := c.archive
	a.mu.Lock()
	defer a.mu.Unlock()
	return ArchiveStats{Dir: a.dir, Written: a.written, Failed: a.failed, Pruned: a.pruned, Full: a.full, LastErr: a.lastErr}, true
}

// tracksFile is tracks.json: what a restart needs to describe the channel again.
type tracksFile struct {
	AvailabilityStart time.Time      `json:"availability_start"`
	Tracks            []*media.Track `json:"tracks"`
	Periods           []media.Period `json:"periods,omitempty"` // live periods after the first
}

// archiveTracksLocked queues tracks.json with the channel's tracks as they are now.
func (c *Channel) archiveTracks() {
	if c.archive == nil {
		return
	}
	info := c.Info()
	tf := tracksFile{AvailabilityStart: *c.anchor.Load(), Periods: c.Periods()}
	for _, t := range info.Tracks {
		cp := *t
		cp.Segments, cp.InitPath = nil, ""
		tf.Tracks = append(tf.Tracks, &cp)
	}
	b, err := json.MarshalIndent(tf, "", "  ")
	if err == nil {
		c.archive.saveTracks(append(b, '\n'))
	}
}

// restoreFromArchive loads what an earlier run archived: the tracks, their headers
// and the segments still inside the DVR window by the channel's clock, so that
// after a restart the manifests show the window at once. It is for channels that
// sources append to (not looped ones, which make any segment on demand).
func (c *Channel) restoreFromArchive(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "tracks.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var tf tracksFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return fmt.Errorf("%s/tracks.json is damaged (%v): move it away to start the channel empty", dir, err)
	}
	c.anchor.Store(&tf.AvailabilityStart)
	c.mu.Lock()
	c.periods = tf.Periods
	c.mu.Unlock()
	cut := c.now().Add(-c.timeline.TimeShiftBufferDepth - c.timeline.SegmentDuration)
	for _, t := range tf.Tracks {
		if err := c.AddTrack(t); err != nil {
			return err
		}
		init, err := os.ReadFile(filepath.Join(dir, t.ID, "init.mp4"))
		if err != nil {
			return fmt.Errorf("archive %s: track %s has no header: %w", dir, t.ID, err)
		}
		lt, _ := c.track(t.ID)
		c.mu.Lock()
		lt.init = init
		c.mu.Unlock()
		c.archive.mu.Lock()
		c.archive.inits[t.ID] = init
		c.archive.mu.Unlock()
		refs, err := readIndexes(dir, t.ID)
		if err != nil {
			return err
		}
		for _, r := range refs {
			end := tf.AvailabilityStart.Add(t.Duration(r.ref.Start + r.ref.Duration))
			if end.Before(cut) {
				continue
			}
			data, err := os.ReadFile(r.path)
			if err != nil || int64(len(data)) != r.ref.Size {
				continue // pruned or never completed: not part of the window
			}
			e := &entry{seg: media.Segment{SegmentRef: r.ref}, complete: true, at: end}
			e.seg.Chunks = []*media.Chunk{{Data: data, Start: r.ref.Start, Duration: r.ref.Duration, Keyframe: true, Period: r.ref.Period}}
			e.told = 1
			c.mu.Lock()
			if k := len(lt.segs); k == 0 || lt.segs[k-1].seg.Number < r.ref.Number {
				lt.segs = append(lt.segs, e)
			}
			c.mu.Unlock()
		}
	}
	return nil
}

type indexed struct {
	ref  media.SegmentRef
	path string
}

// readIndexes reads a track's index lines from the ungrouped folder and every group,
// oldest first. A torn last line (a crash mid-append) is skipped.
func readIndexes(dir, track string) ([]indexed, error) {
	folders := []string{filepath.Join(dir, track)}
	entries, _ := os.ReadDir(dir)
	var groups []int64
	for _, e := range entries {
		if g, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && e.IsDir() {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	for _, g := range groups {
		folders = append(folders, filepath.Join(dir, strconv.FormatInt(g, 10), track))
	}
	var out []indexed
	for _, f := range folders {
		file, err := os.Open(filepath.Join(f, "index.txt"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			ref, ok := parseIndexLine(sc.Text())
			if !ok {
				continue
			}
			out = append(out, indexed{ref, filepath.Join(f, fmt.Sprintf("%d.m4s", ref.Number))})
		}
		file.Close()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ref.Number < out[j].ref.Number })
	return out, nil
}

// parseIndexLine reads "n start duration size" and, for a segment of a later live
// period, " pP". Anything else (a torn line) is not ok.
func parseIndexLine(line string) (media.SegmentRef, bool) {
	f := strings.Split(line, " ")
	if len(f) != 4 && len(f) != 5 {
		return media.SegmentRef{}, false
	}
	var r media.SegmentRef
	var err error
	nums := []*uint64{&r.Number, &r.Start, &r.Duration}
	for i, p := range nums {
		if *p, err = strconv.ParseUint(f[i], 10, 64); err != nil {
			return media.SegmentRef{}, false
		}
	}
	if r.Size, err = strconv.ParseInt(f[3], 10, 64); err != nil || r.Size < 0 {
		return media.SegmentRef{}, false
	}
	if len(f) == 5 {
		p, ok := strings.CutPrefix(f[4], "p")
		v, err := strconv.ParseUint(p, 10, 32)
		if !ok || err != nil {
			return media.SegmentRef{}, false
		}
		r.Period = uint32(v)
	}
	return r, true
}
