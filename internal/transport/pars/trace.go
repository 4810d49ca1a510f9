package pars

import "time"

// UnitTrace is what one unit of a pipelined segment (a range, or the whole
// resource) did on its connection: when a connection took it from the queue, when
// its request went out, and when its first and last body bytes arrived. A lab turns
// these into the idle gaps of each connection between the end of one range's body and
// the first byte of the next (docs/results/pars.md).
type UnitTrace struct {
	Lane    int    // the connection (stable for the client's life)
	Segment uint64 // the segment's number
	Unit    int    // the range's index in the segment
	Bytes   int64
	// Picked: a connection took the unit. Sent: its (first) request was handed to
	// the connection — written at once on an HTTP/1.1 connection that is free, or
	// queued behind the response it is reading when requests are pipelined.
	Picked, Sent, FirstByte, Done time.Time
	Err                           bool
}

// trace reports unit i of j, run on lane l from picked, to Options.Trace.
func (c *Client) trace(j *segJob, i int, l *lane, picked time.Time, err error) {
	if c.opts.Trace == nil {
		return
	}
	j.m.mu.Lock()
	lc := j.m.lanes[i]
	j.m.mu.Unlock()
	c.opts.Trace(UnitTrace{Lane: l.id, Segment: j.num, Unit: i, Bytes: lc.total,
		Picked: picked, Sent: lc.sent, FirstByte: lc.first, Done: lc.done, Err: err != nil})
}
