package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/mpegts"
)

// muxed is a TS of n video access units (25 fps, one keyframe first) written by
// internal/mpegts, with the times in 90 kHz.
func muxed(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	w := mpegts.NewWriter(&b, nil)
	for i := 0; i < n; i++ {
		au := append([]byte{0, 0, 0, 1, 0x65}, bytes.Repeat([]byte{0xAB}, 500+i*100)...)
		if err := w.WriteVideo(int64(3600*i+3600), int64(3600*i), au, i == 0); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestTSReceiver: the receiver finds the video PID through PAT and PMT, takes
// each access unit's DTS, and counts the packets a dropped datagram takes away.
func TestTSReceiver(t *testing.T) {
	ts := muxed(t, 10)
	ds, err := schedule(ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) < 5 {
		t.Fatalf("%d datagrams", len(ds))
	}
	for i := 1; i < len(ds); i++ {
		if ds[i].At < ds[i-1].At {
			t.Fatalf("datagram %d at %s before %s", i, ds[i].At, ds[i-1].At)
		}
	}
	if last := ds[len(ds)-1].At; last < 9*40*time.Millisecond || last >= 10*40*time.Millisecond {
		t.Fatalf("last datagram at %s: not spread over the tenth frame", last)
	}
	rx := newTSReceiver()
	t0 := time.Unix(0, 0)
	drop := 3
	for i, d := range ds {
		if i != drop {
			rx.datagram(d.Data, t0.Add(d.At))
		}
	}
	rx.finish()
	if rx.Malformed != 0 || rx.Datagrams != len(ds)-1 {
		t.Fatalf("malformed %d, datagrams %d", rx.Malformed, rx.Datagrams)
	}
	lost := len(ds[drop].Data) / 188
	if rx.CCGaps != lost {
		t.Fatalf("CC gaps %d, want the %d packets of the dropped datagram", rx.CCGaps, lost)
	}
	if len(rx.AUs) < 9 {
		t.Fatalf("%d access units", len(rx.AUs))
	}
	for i, a := range rx.AUs {
		if a.Ready.Before(a.Start) || (i > 0 && a.DTS <= rx.AUs[i-1].DTS) {
			t.Fatalf("access unit %d: %+v", i, a)
		}
	}
}

// TestPlayout is FDSP's rule on access units: start-up is instance 1; an access
// unit complete after its deadline is an instance lasting until it is, and
// moves every later deadline.
func TestPlayout(t *testing.T) {
	start := time.Unix(100, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	aus := []auArrival{
		{DTS: 0, Ready: at(200)},
		{DTS: 3600, Ready: at(240)},      // due 200+50+40 = 290: on time
		{DTS: 7200, Ready: at(400)},      // due 330: 70 ms late
		{DTS: 10800, Ready: at(410)},     // due 440 (shifted): on time
		{DTS: 14400, Ready: at(480 + 1)}, // due 480: 1 ms late, under the slack
	}
	r := playout(aus, start, 50*time.Millisecond)
	if r.StartupMS != 200 || r.FirstFrameMS != 250 || r.RebufferCount != 2 || r.RebufferMS != 270 || len(r.Stalls) != 1 || r.Stalls[0] != (stall{0.08, 70}) {
		t.Fatalf("%+v", r)
	}
	// Shown at 250, 290, 400, 440, 480 against a source at 0, 40, 80, 120, 160.
	if r.LatencyMedianMS != 320 || r.LatencyMaxMS != 320 {
		t.Fatalf("latency %+v", r)
	}
	if z := playout(nil, start, 0); z.RebufferCount != 0 {
		t.Fatalf("no access units: %+v", z)
	}
}

// FuzzTSReceiver: any datagram bytes are counted, never a panic, and the
// access units found keep their arrival order.
func FuzzTSReceiver(f *testing.F) {
	ts := muxed(f, 3)
	f.Add(ts[:datagramSize])
	f.Add(ts)
	f.Add([]byte{0x47, 0x40, 0, 0x30, 200})
	f.Add(bytes.Repeat([]byte{0x47}, 188))
	f.Fuzz(func(t *testing.T, b []byte) {
		rx := newTSReceiver()
		rx.datagram(b, time.Unix(1, 0))
		rx.datagram(b, time.Unix(2, 0))
		rx.finish()
		if rx.Packets > 2*len(b)/188 {
			t.Fatalf("%d packets from %d bytes", rx.Packets, len(b))
		}
	})
}

func TestTSReceiverSkipsNullFlush(t *testing.T) {
	rx := newTSReceiver()
	for _, d := range nullFlush() {
		rx.datagram(d.Data, time.Time{})
	}
	if rx.Datagrams != 0 || rx.Malformed != 0 {
		t.Fatalf("null flush counted: %d datagrams, %d malformed", rx.Datagrams, rx.Malformed)
	}
	// A datagram with one null packet among others is the stream's.
	d := append(append([]byte(nil), nullFlush()[0].Data[:188]...), make([]byte, 188)...)
	d[188] = 0x47
	if allNull(d) {
		t.Fatal("a datagram with a PID-0 packet read as null only")
	}
}
