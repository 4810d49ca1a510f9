package fdsp

import (
	"context"
	"errors"
	"time"

	"github.com/streambed/streambed/internal/avc"
)

// play is the client's playout: each substream waits for its TCP part (a wait past
// the time it is due is rebuffering; the first is the start-up delay), then each
// access unit is assembled from what arrived by its deadline and written out.
func (c *client) play(ctx context.Context) error {
	var (
		anchor time.Time
		dts0   uint64
		shift  time.Duration
		due    time.Time // when the next substream is needed
	)
	deadline := func(dts uint64) time.Time {
		return anchor.Add(c.opts.PlayoutDelay + ticks90(dts-dts0) + shift)
	}
	for k := uint32(0); ; k++ {
		if k > 0 {
			c.setState("stalled") // until the substream is ready; reset below if it was
		}
		s, err := c.await(ctx, k)
		if err != nil || s == nil {
			return err
		}
		c.setState("playing")
		if s == skipped {
			continue
		}
		var late time.Duration
		if anchor.IsZero() {
			anchor, dts0 = s.doneAt, s.hdr.FirstDTS
			c.mu.Lock()
			c.stats.StartupMS = ms(anchor.Sub(c.start))
			c.stats.RebufferMS += c.stats.StartupMS
			c.stats.RebufferCount++
			c.mu.Unlock()
		} else {
			due = deadline(s.hdr.FirstDTS)
			if late = s.doneAt.Sub(due); late > 0 {
				shift += late
				c.mu.Lock()
				c.shift = shift
				c.stats.RebufferMS += ms(late)
				c.stats.RebufferCount++
				c.mu.Unlock()
			} else {
				late = 0
			}
		}
		lost, expected, err := c.playSubstream(ctx, s, deadline)
		c.mu.Lock()
		c.stats.Substreams++
		c.stats.BPs = append(c.stats.BPs, int(s.hdr.BP))
		c.bpSum += int(s.hdr.BP)
		delete(c.subs, k)
		c.keepPlayedAUs(k, s.aus)
		c.playing = k + 1
		repaired := 0
		if c.rep != nil {
			c.rep.forget(k + 1)
			repaired = min(c.part(k).Repaired, expected-lost)
		}
		st := c.stats
		c.mu.Unlock()
		c.send(FrameReport, Report{Substream: k, Lost: uint32(lost), Expected: uint32(expected), LateMS: uint32(late.Milliseconds()), Repaired: uint32(repaired)}.Marshal())
		if c.opts.Progress != nil {
			c.opts.Progress(st)
		}
		if err != nil {
			return err
		}
	}
}

func (c *client) setState(s string) {
	c.mu.Lock()
	c.state = s
	c.mu.Unlock()
}

// skipped stands for a substream that will never complete.
var skipped = &rxSub{}

// await waits until substream k's TCP part is complete; nil at the end of the
// stream, skipped for a substream cut by a reconnection.
func (c *client) await(ctx context.Context, k uint32) (*rxSub, error) {
	for {
		c.mu.Lock()
		s := c.subs[k]
		switch {
		case c.fatal != nil:
			err := c.fatal
			c.mu.Unlock()
			return nil, err
		case s != nil && s.complete:
			c.mu.Unlock()
			return s, nil
		case k < c.skipTo:
			c.stats.Skipped++
			delete(c.subs, k)
			c.playing = k + 1
			c.mu.Unlock()
			return skipped, nil
		case c.ended:
			c.mu.Unlock()
			return nil, nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// playSubstream plays one substream's access units at their deadlines.
func (c *client) playSubstream(ctx context.Context, s *rxSub, deadline func(uint64) time.Time) (lost, expected int, err error) {
	c.mu.Lock()
	if c.ps == nil || c.psParams != string(joinParams(s.hdr.Params)) {
		c.ps = avc.NewParameterSets()
		for _, p := range s.hdr.Params {
			_ = c.ps.Add(p)
		}
		c.psParams = string(joinParams(s.hdr.Params))
	}
	ps := c.ps
	asc := c.asc
	part := c.part(s.hdr.Index)
	part.BP, part.ShiftMS = int(s.hdr.BP), ms(c.shift)
	c.mu.Unlock()
	if c.opts.NewSink != nil && c.sink == nil {
		if c.sink, err = c.opts.NewSink(asc); err != nil {
			return 0, 0, err
		}
	}
	nextAudio := 0
	var out []byte
	for _, p := range s.hdr.Params {
		out = avc.AppendAnnexB(out, p)
	}
	for _, a := range s.aus {
		if err := sleepUntil(ctx, deadline(a.DTS)); err != nil {
			return lost, expected, err
		}
		c.mu.Lock()
		nals, got, whole := assemble(a, s.frags)
		s.doneSeq = int(a.FirstSeq) + int(a.UDPPackets)
		for i := 0; i < int(a.UDPPackets); i++ {
			delete(s.frags, a.FirstSeq+uint16(i))
		}
		miss := int(a.UDPPackets) - got
		lost += miss
		expected += int(a.UDPPackets)
		c.stats.Lost += miss
		c.stats.Expected += int(a.UDPPackets)
		part.Lost += miss
		part.Packets += int(a.UDPPackets)
		c.stats.Packets += udpPackets(a)
		c.stats.AUs++
		c.shownPTS, c.shownDur, c.shownAt = uint64(int64(a.DTS)+int64(a.CTO)), uint64(a.Duration), time.Now()
		c.stats.PlayedS += float64(a.Duration) / 90000
		if whole {
			c.stats.Whole++
		}
		decodable := true
		for _, n := range nals {
			if len(n) == 0 {
				decodable = false
				continue
			}
			if avc.Type(n).IsSlice() {
				decodable = decodable && ps.HeaderComplete(n)
			}
			out = avc.AppendAnnexB(out, n)
		}
		if decodable {
			c.stats.DecodableAUs++
		}
		c.mu.Unlock()
		if err := c.write(s, &nextAudio, a, nals, out); err != nil {
			return lost, expected, err
		}
		out = out[:0]
	}
	if c.sink != nil {
		return lost, expected, writeAudio(c.sink, s, &nextAudio, ^uint64(0))
	}
	return lost, expected, nil
}

// write hands one played access unit to the sink (after the audio presented
// before it) or to Output.
func (c *client) write(s *rxSub, nextAudio *int, a AU, nals [][]byte, annexB []byte) error {
	if c.sink == nil {
		_, err := c.opts.Output.Write(annexB)
		return err
	}
	pts := uint64(int64(a.DTS) + int64(a.CTO))
	if err := writeAudio(c.sink, s, nextAudio, pts); err != nil {
		return err
	}
	key := false
	for _, n := range nals {
		key = key || avc.Type(n) == avc.NALSliceIDR
	}
	return c.sink.WriteVideo(VideoFrame{PTS: pts, DTS: a.DTS, Key: key, AnnexB: annexB})
}

func joinParams(ps [][]byte) []byte {
	var b []byte
	for _, p := range ps {
		b = avc.AppendAnnexB(b, p)
	}
	return b
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// finish completes the stats after the session.
func (c *client) finish(err error) Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.SessionS = time.Since(c.start).Seconds()
	if st.Substreams > 0 {
		st.BP = float64(c.bpSum) / float64(st.Substreams)
	}
	if st.Packets > 0 {
		st.PLR = float64(st.Lost) / float64(st.Packets)
	}
	if st.Expected > 0 {
		st.UDPLoss = float64(st.Lost) / float64(st.Expected)
	}
	st.UDPParts = c.udpParts()
	if c.rep != nil {
		st.Repair = c.rep.stats()
	}
	if st.AUs > 0 {
		st.Decodable = float64(st.DecodableAUs) / float64(st.AUs)
	}
	switch {
	case err == nil:
		st.EndReason = "ended"
	case errors.Is(err, context.DeadlineExceeded):
		st.EndReason = "duration"
	case errors.Is(err, context.Canceled):
		st.EndReason = "canceled"
	default:
		st.EndReason = "error"
	}
	return st
}
