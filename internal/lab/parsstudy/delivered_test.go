package main

import (
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// The link share is the same computation for every client: bytes delivered within
// the window over what the link carries in it.
func TestDeliveredShare(t *testing.T) {
	const link = 10e6 // bit/s
	for _, tc := range []struct {
		name      string
		d         delivered
		kbps      float64
		rate      float64
		wantShare float64
	}{
		// 30 s at 10 Mbit/s carry 37.5 MB: 31.875 MB is 85%.
		{"85% of 10 Mbit/s in 30 s", delivered{Bytes: 31_875_000, Window: 30 * time.Second}, 8500, link, 0.85},
		// The same bytes over a longer window (a client that ran past the budget) are less.
		{"same bytes, 31 s", delivered{Bytes: 31_875_000, Window: 31 * time.Second}, 8225.806, link, 0.8226},
		{"the whole link", delivered{Bytes: 1_250_000, Window: time.Second}, 10000, link, 1},
		{"nothing delivered", delivered{Window: time.Second}, 0, link, 0},
		{"empty window", delivered{Bytes: 1000}, 0, link, 0},
		{"no rate", delivered{Bytes: 1000, Window: time.Second}, 8, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.kbps(); math.Abs(got-tc.kbps) > 0.001 {
				t.Errorf("kbps %v, want %v", got, tc.kbps)
			}
			if got := tc.d.share(tc.rate); math.Abs(got-tc.wantShare) > 0.0001 {
				t.Errorf("share %v, want %v", got, tc.wantShare)
			}
			m := tc.d.metrics(tc.rate)
			if m["link_share"] != round(tc.wantShare, 3) || m["delivered_kbps"] != round(tc.kbps, 1) {
				t.Errorf("metrics %v", m)
			}
		})
	}
}

// sampleAt reads the count once, after the budget, while the client goes on: what
// arrives later does not count.
func TestSampleAtReadsAfterBudget(t *testing.T) {
	var n atomic.Int64
	n.Store(100)
	read := make(chan struct{})
	start := time.Now()
	wait := sampleAt(start, 5*time.Millisecond, func() int64 {
		defer close(read)
		return n.Load()
	})
	<-read
	n.Add(50) // after the window
	d := wait()
	if d.Bytes != 100 {
		t.Fatalf("read %d bytes, want 100", d.Bytes)
	}
	if d.Window < 5*time.Millisecond {
		t.Fatalf("window %v shorter than the budget", d.Window)
	}
}

// filesBytes counts the downloads' files (finished or being written), not aria2c's
// control files.
func TestFilesBytes(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"f0000.m4s": 1000, "f0001.m4s": 250, "f0001.m4s.aria2": 77, "list": 9} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := filesBytes(dir, ".m4s"); got != 1250 {
		t.Fatalf("filesBytes %d, want 1250", got)
	}
	if got := filesBytes(filepath.Join(dir, "none"), ".m4s"); got != 0 {
		t.Fatalf("missing dir: %d", got)
	}
}
