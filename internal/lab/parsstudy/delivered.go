package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// delivered is what one client received in a throughput cell: the one definition of
// link use for every client (ParS, aria2c, the bulk flows). Bytes are the response
// bodies delivered to the client from its start to the end of the cell's window,
// finished or not (a ParS segment fetched ahead and still arriving, an aria2c file
// half written, a bulk flow's stream); Window is that time as measured. A client's
// "completed" figure (segments handed to the player, files aria2c reported done) is
// kept beside it: it leaves out what was still arriving when the cell ended.
type delivered struct {
	Bytes  int64
	Window time.Duration
}

// kbps is the delivered rate in kbit/s (0 for an empty window).
func (d delivered) kbps() float64 {
	if d.Window <= 0 {
		return 0
	}
	return float64(d.Bytes) * 8 / d.Window.Seconds() / 1000
}

// share is the link utilisation: the delivered bytes over what a link of rate bit/s
// carries in the window (bytes·8 / (rate·window)).
func (d delivered) share(rate float64) float64 {
	if rate <= 0 || d.Window <= 0 {
		return 0
	}
	return float64(d.Bytes) * 8 / (rate * d.Window.Seconds())
}

// metrics are the delivered figures of a cell's results.
func (d delivered) metrics(rate float64) map[string]any {
	return map[string]any{
		"delivered_kbps":   round(d.kbps(), 1),
		"delivered_mbytes": round(float64(d.Bytes)/1e6, 3),
		"window_s":         round(d.Window.Seconds(), 3),
		"link_share":       round(d.share(rate), 3),
	}
}

// sampleAt reads a client's byte count once budget has passed since start (on a
// timer, while the client is still running) and returns a function that waits for
// that reading. A cell that ends early (an error) may leave the reading unread.
func sampleAt(start time.Time, budget time.Duration, read func() int64) func() delivered {
	ch := make(chan delivered, 1)
	time.AfterFunc(time.Until(start.Add(budget)), func() {
		b := read()
		ch <- delivered{Bytes: b, Window: time.Since(start)}
	})
	return func() delivered { return <-ch }
}

// filesBytes is the size of the files in dir whose names end in suffix: what aria2c
// has written of its downloads (with --disk-cache=0 and files under 2 MiB, which
// -k 1M does not split, each file is written in order, so its size is what arrived).
func filesBytes(dir, suffix string) int64 {
	es, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}
