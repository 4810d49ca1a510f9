package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// datagramSize is what SRT carries per packet in live mode: 7 TS packets (1316
// bytes), srt-live-transmit's default chunk.
const datagramSize = 7 * 188

// timedDatagram is one datagram of a TS file and when, in media time from the
// first access unit, it is sent.
type timedDatagram struct {
	At   time.Duration
	Data []byte
}

// schedule cuts a TS file (ours: made by FFmpeg) into 1316-byte datagrams and
// spreads each video access unit's datagrams evenly over its duration, as FDSP's
// UDP sender spreads an access unit's packets: no bursts at I-frames.
func schedule(ts []byte) ([]timedDatagram, error) {
	if len(ts) == 0 || len(ts)%188 != 0 {
		return nil, fmt.Errorf("TS file of %d bytes: not whole 188-byte packets", len(ts))
	}
	rx := newTSReceiver()
	var out []timedDatagram
	var starts []int // index of the datagram where each access unit begins
	var dts []uint64
	for off := 0; off < len(ts); off += datagramSize {
		d := ts[off:min(off+datagramSize, len(ts))]
		n := len(rx.AUs)
		rx.datagram(d, time.Time{})
		for _, a := range rx.AUs[n:] {
			starts, dts = append(starts, len(out)), append(dts, a.DTS)
		}
		out = append(out, timedDatagram{Data: d})
	}
	if len(starts) < 2 {
		return nil, errors.New("TS file has fewer than two video access units")
	}
	frame := dts[1] - dts[0]
	if dts[1] <= dts[0] {
		return nil, errors.New("TS file: video DTS not increasing")
	}
	for k, s := range starts {
		end, next := len(out), dts[k]+frame
		if k+1 < len(starts) {
			end, next = starts[k+1], dts[k+1]
		}
		if next <= dts[k] {
			next = dts[k] + frame // out of order or a wrap: one frame's time
		}
		for i := s; i < end; i++ {
			span := ticks90(next - dts[k])
			out[i].At = ticks90(dts[k]-dts[0]) + span*time.Duration(i-s)/time.Duration(end-s)
		}
	}
	return out, nil // datagrams before the first access unit (PAT, PMT) go at 0
}

// pace sends the datagrams on c at start + At (a timer's slack is made up on the
// next: no drift). c is a UDP socket or a pipe (one write per datagram: a pipe
// keeps writes up to 4 KiB whole, so the reader's 1316-byte reads see datagrams).
func pace(ctx context.Context, c io.Writer, ds []timedDatagram, start time.Time) error {
	for _, d := range ds {
		if w := time.Until(start.Add(d.At)); w > 0 {
			t := time.NewTimer(w)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if _, err := c.Write(d.Data); err != nil {
			return err
		}
	}
	return nil
}

// nullFlush is 100 datagrams of null TS packets (PID 0x1FFF) over 1 s: enough
// bytes to push a reader's buffer out after the stream (tsReceiver skips them).
func nullFlush() []timedDatagram {
	d := make([]byte, datagramSize)
	for off := 0; off < len(d); off += 188 {
		copy(d[off:], []byte{0x47, 0x1f, 0xff, 0x10})
	}
	out := make([]timedDatagram, 100)
	for i := range out {
		out[i] = timedDatagram{At: time.Duration(i) * 10 * time.Millisecond, Data: d}
	}
	return out
}
