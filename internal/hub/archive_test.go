package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/media"
)

// ingestLike is a channel that a source appends to (no OnDemand), like an encoder's,
// on a pinned clock; segments of 1 s (timescale 1000) from media time 0 = anchor.
func ingestLike(t *testing.T, dir string, now *time.Time, mu *sync.Mutex, group, length time.Duration) (*Channel, *Hub, context.CancelFunc) {
	t.Helper()
	c, err := NewChannel(ChannelConfig{
		Info:       &media.Stream{Name: "in", SegmentDuration: time.Second},
		ArchiveDir: dir, ArchiveGroup: group, ArchiveLength: length,
		Timeline: media.Timeline{AvailabilityStart: time.Unix(1000, 0), SegmentDuration: time.Second, TimeShiftBufferDepth: 5 * time.Second},
		Clock:    func() time.Time { mu.Lock(); defer mu.Unlock(); return *now },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := New()
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.AddChannel(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	return c, h, cancel
}

// ingestVideo is ingestLike with the video track "v" (header {7}) an encoder added.
func ingestVideo(t *testing.T, dir string, now *time.Time, mu *sync.Mutex) (*Channel, *Hub, context.CancelFunc) {
	t.Helper()
	c, h, cancel := ingestLike(t, dir, now, mu, 0, 0)
	if err := c.AddTrack(&media.Track{ID: "v", Kind: media.Video, Timescale: 1000, Codec: "avc1.64001f", Bandwidth: 500000}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetInit("v", []byte{7}); err != nil {
		t.Fatal(err)
	}
	return c, h, cancel
}

func feed(t *testing.T, c *Channel, now *time.Time, mu *sync.Mutex, from, to uint64) {
	t.Helper()
	for n := from; n < to; n++ {
		mu.Lock()
		*now = time.Unix(1000+int64(n)+1, 0)
		mu.Unlock()
		if err := c.Publish("v", segment(n, 1000)); err != nil {
			t.Fatalf("segment %d: %v", n, err)
		}
	}
}

// Segments are grouped by media time, each group with its header and index, and
// groups older than the archive length are removed whole.
func TestArchiveGroupsAndPrunes(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	c, h, cancel := ingestLike(t, dir, &now, &mu, 4*time.Second, 8*time.Second)
	defer h.Close()
	defer cancel()
	if err := c.AddTrack(&media.Track{ID: "v", Kind: media.Video, Timescale: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetInit("v", []byte{7}); err != nil {
		t.Fatal(err)
	}
	feed(t, c, &now, &mu, 0, 14) // media 0..14 s: groups 0, 4, 8, 12
	waitFor(t, func() bool { st, _ := c.Archive(); return st.Written == 14 })
	// The newest segment ends at 14 s: groups ending at or before 6 s (group 0) are gone.
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "0")); return errors.Is(err, os.ErrNotExist) })
	for _, g := range []string{"4", "8", "12"} {
		if init, err := os.ReadFile(filepath.Join(dir, g, "v", "init.mp4")); err != nil || !bytes.Equal(init, []byte{7}) {
			t.Errorf("group %s header: %v %v", g, init, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "8", "v", "9.m4s"))
	if err != nil || !bytes.Equal(b, []byte{9, 0, 9, 1}) {
		t.Errorf("segment 9 in group 8: %v %v", b, err)
	}
	idx, _ := os.ReadFile(filepath.Join(dir, "8", "v", "index.txt"))
	if string(idx) != "8 8000 1000 4\n9 9000 1000 4\n10 10000 1000 4\n11 11000 1000 4\n" {
		t.Errorf("group 8 index:\n%s", idx)
	}
	if st, _ := c.Archive(); st.Pruned != 1 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// After a restart, a channel comes back from its archive: its tracks, headers and
// the segments of its DVR window, byte for byte; an encoder that continues is taken,
// and what it sends again is dropped.
func TestArchiveRestoresAfterARestart(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	c, h, cancel := ingestVideo(t, dir, &now, &mu)
	feed(t, c, &now, &mu, 0, 10)
	// Segment 10 is in progress when the origin stops: it must not be archived.
	if err := c.AppendChunk("v", 10, segment(10, 1000).Chunks[0], false); err != nil {
		t.Fatal(err)
	}
	before, err := c.Window(now)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	h.Close() // drains the archive queue
	if _, err := os.Stat(filepath.Join(dir, "v", "10.m4s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the segment in progress was archived: %v", err)
	}

	c2, h2, cancel2 := ingestLike(t, dir, &now, &mu, 0, 0)
	defer h2.Close()
	defer cancel2()
	info := c2.Info()
	if len(info.Tracks) != 1 || info.Tracks[0].Codec != "avc1.64001f" || info.Tracks[0].Bandwidth != 500000 {
		t.Fatalf("restored tracks %+v", info.Tracks)
	}
	if init, _ := c2.Init("v"); !bytes.Equal(init, []byte{7}) {
		t.Errorf("restored header %v", init)
	}
	after, err := c2.Window(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(after["v"]) == 0 || len(after["v"]) > len(before["v"]) {
		t.Fatalf("window before %v, after %v", before["v"], after["v"])
	}
	for _, r := range after["v"] {
		s, err := c2.Segment("v", r.Number, now)
		if err != nil || !bytes.Equal(s.Bytes(), segment(r.Number, 1000).Bytes()) {
			t.Errorf("restored segment %d: %v", r.Number, err)
		}
	}
	if n, ok := c2.Latest(now); !ok || n != 9 {
		t.Errorf("latest after restart = %d, %v; want 9", n, ok)
	}
	// The encoder resends segment 9's chunks and goes on with 10.
	if err := c2.Publish("v", segment(9, 1000)); err != nil {
		t.Errorf("a resent segment was refused: %v", err)
	}
	feed(t, c2, &now, &mu, 10, 12)
	if s, err := c2.Segment("v", 11, now); err != nil || s.Number != 11 {
		t.Errorf("segment 11 after the restart: %v", err)
	}
}

// A full disk refuses new media (the encoder gets 507 from ingest) and never leaves a
// partial file; media flows again once there is room. Uses a real 256 KiB tmpfs.
func TestArchiveFullDisk(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	c, h, cancel := ingestLike(t, dir, &now, &mu, 0, 0)
	defer h.Close()
	defer cancel()
	if err := c.AddTrack(&media.Track{ID: "v", Kind: media.Video, Timescale: 1000}); err != nil {
		t.Fatal(err)
	}
	big := func(n uint64) *media.Segment {
		return &media.Segment{SegmentRef: media.SegmentRef{Number: n, Start: n * 1000, Duration: 1000},
			Chunks: []*media.Chunk{{Data: bytes.Repeat([]byte{byte(n)}, 40<<10), Start: n * 1000, Duration: 1000, Keyframe: true}}}
	}
	var refused error
	for n := uint64(0); n < 40 && refused == nil; n++ {
		mu.Lock()
		now = time.Unix(1000+int64(n)+1, 0)
		mu.Unlock()
		err := c.Publish("v", big(n))
		if errors.Is(err, ErrDiskFull) {
			refused = err
			break
		}
		if err != nil {
			t.Fatalf("segment %d: %v", n, err)
		}
		waitFor(t, func() bool { st, _ := c.Archive(); return st.Written+st.Failed > int(n) })
	}
	if refused == nil {
		t.Fatal("40 segments of 40 KiB went into 256 KiB with no refusal")
	}
	st, _ := c.Archive()
	if !st.Full || st.Failed == 0 {
		t.Errorf("stats after a full disk: %+v", st)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "v"))
	for _, e := range entries {
		info, _ := e.Info()
		if strings.HasPrefix(e.Name(), ".") || strings.HasSuffix(e.Name(), ".m4s") && info.Size() != 40<<10 {
			t.Errorf("partial or temporary file %s (%d bytes)", e.Name(), info.Size())
		}
	}
	// Room again: after the probe interval, media flows.
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".m4s") {
			os.Remove(filepath.Join(dir, "v", e.Name()))
		}
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if err := c.Publish("v", big(100)); err != nil {
		t.Errorf("media still refused after space was freed: %v", err)
	}
}

// A window of the archive becomes an on-demand asset: the segments whose wall-clock
// time overlaps it, their decode times moved to start at zero, with headers and a
// valid descriptor; a gap in the window is refused.
func TestCutArchive(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	c, h, cancel := ingestLike(t, dir, &now, &mu, 4*time.Second, 0)
	if err := c.AddTrack(&media.Track{ID: "v", Kind: media.Video, Timescale: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetInit("v", []byte{7}); err != nil {
		t.Fatal(err)
	}
	// Real CMAF fragments: one 1 s sample per segment, media time = n s.
	real := func(n uint64) *media.Segment {
		b, err := cmaf.AppendFragment(nil, uint32(n+1), 1, n*1000, []cmaf.Sample{{Duration: 1000, Size: 3, Flags: cmaf.SyncSampleFlags, Data: []byte{byte(n), 1, 2}}})
		if err != nil {
			t.Fatal(err)
		}
		return &media.Segment{SegmentRef: media.SegmentRef{Number: n, Start: n * 1000, Duration: 1000},
			Chunks: []*media.Chunk{{Data: b, Start: n * 1000, Duration: 1000, Keyframe: true}}}
	}
	for _, n := range []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13} { // the encoder was away for 10 and 11
		mu.Lock()
		now = time.Unix(1000+int64(n)+1, 0)
		mu.Unlock()
		if err := c.Publish("v", real(n)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	h.Close()

	out := filepath.Join(t.TempDir(), "clip")
	// Wall clock = 1000 s + media time: [3.5 s, 7.2 s) overlaps segments 3..7.
	a, err := CutArchive(dir, time.Unix(1003, 5e8), time.Unix(1007, 2e8), out)
	if err != nil {
		t.Fatal(err)
	}
	segs := a.Tracks[0].Segments
	if len(segs) != 5 || segs[0].Number != 1 || segs[4].Number != 5 || segs[0].Start != 0 || segs[4].Start != 4000 || a.DurationMS != 5000 {
		t.Fatalf("clip %+v: %+v", a, segs)
	}
	served, err := OpenAsset(out)
	if err != nil {
		t.Fatalf("the clip is not a servable asset: %v", err)
	}
	s, err := served.ReadSegment("v", 3) // the archive's segment 5
	if err != nil {
		t.Fatal(err)
	}
	frags, err := cmaf.ParseFragments(s.Bytes())
	if err != nil || len(frags) != 1 || frags[0].BaseMediaDecodeTime != 2000 || frags[0].Samples[0].Data[0] != 5 {
		t.Errorf("clip segment 5: %+v %v (want tfdt 2000, the sample of segment 5)", frags, err)
	}
	if init, _ := served.Init("v"); !bytes.Equal(init, []byte{7}) {
		t.Errorf("clip header %v", init)
	}
	for name, window := range map[string][2]int64{"a gap": {1008, 1013}, "nothing": {2000, 2010}, "backwards": {1005, 1004}} {
		if _, err := CutArchive(dir, time.Unix(window[0], 0), time.Unix(window[1], 0), filepath.Join(t.TempDir(), "x")); err == nil {
			t.Errorf("%s: cut", name)
		}
	}
}

// A later live period (an encoder that restarted) is recorded with its start, its
// segments carry its index, and both come back from the archive after a restart.
func TestArchiveKeepsPeriods(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	c, h, cancel := ingestVideo(t, dir, &now, &mu)
	feed(t, c, &now, &mu, 0, 4)
	c.StartPeriod(1, 4*time.Second)
	for n := uint64(4); n < 7; n++ {
		s := segment(n, 1000)
		s.Chunks[0].Period = 1 // the first chunk says where the segment starts
		mu.Lock()
		now = time.Unix(1000+int64(n)+1, 0)
		mu.Unlock()
		if err := c.Publish("v", s); err != nil {
			t.Fatal(err)
		}
	}
	check := func(who string, c *Channel) {
		t.Helper()
		w, err := c.Window(now)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range w["v"] {
			if want := uint32(0); r.Number >= 4 && r.Period != 1 || r.Number < 4 && r.Period != want {
				t.Errorf("%s: segment %d in period %d", who, r.Number, r.Period)
			}
		}
		if p := c.Periods(); len(p) != 1 || p[0] != (media.Period{Index: 1, Start: 4 * time.Second}) {
			t.Errorf("%s: periods %v", who, p)
		}
	}
	check("live", c)
	cancel()
	h.Close()
	c2, h2, cancel2 := ingestLike(t, dir, &now, &mu, 0, 0)
	defer h2.Close()
	defer cancel2()
	check("restored", c2)
	// A segment after the restored ones stays in the newest period.
	mu.Lock()
	now = time.Unix(1008, 0)
	mu.Unlock()
	if err := c2.Publish("v", segment(7, 1000)); err != nil {
		t.Fatal(err)
	}
	if r, err := c2.Ref("v", 7, now); err != nil || r.Period != 1 {
		t.Errorf("segment 7: period %d (%v), want 1", r.Period, err)
	}
}

func TestParseIndexLine(t *testing.T) {
	for line, want := range map[string]*media.SegmentRef{
		"3 3000 1000 512":    {Number: 3, Start: 3000, Duration: 1000, Size: 512},
		"3 3000 1000 512 p2": {Number: 3, Start: 3000, Duration: 1000, Size: 512, Period: 2},
		"3 3000 1000":        nil, // torn
		"3 3000 1000 512 p":  nil,
		"3 3000 1000 512 2":  nil,
		"3 3000 1000 -1":     nil,
		"3 3000 1000 5 p1 x": nil,
		"":                   nil,
	} {
		got, ok := parseIndexLine(line)
		if ok != (want != nil) || ok && got != *want {
			t.Errorf("%q: %+v %v, want %+v", line, got, ok, want)
		}
	}
}
