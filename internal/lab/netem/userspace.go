package netem

import (
	"errors"
	"os"
	"sync"
	"time"
)

// The user-space backend joins two hosts with a TUN device in each namespace and one
// pipe per direction in this process: a reader goroutine takes each packet the
// sending host routes into its TUN device, the shaper decides its fate, and a
// delivery goroutine writes it into the receiving host's TUN device when it is due,
// woken by a timerfd.

const (
	// timerLead arms the timer this much before a packet is due, and packets due
	// within it are written in the same wake-up: it cancels the typical wake-up
	// latency of a timerfd read through the poller (~50µs measured).
	timerLead = 50 * time.Microsecond
	// maxDelayLine bounds packets held for their delay, against runaway memory.
	maxDelayLine = 1 << 17
)

// pipe is one direction of a user-space link.
type pipe struct {
	in, out *os.File // read from the sender's TUN, write to the receiver's
	clk     clock
	pool    *bufPool
	timer   *wakeTimer

	mu      sync.Mutex
	sh      *shaper
	line    pktHeap // packets waiting for their delivery time
	seq     uint64
	armed   int64 // time the timer is armed for; 0 if not
	writing bool  // the delivery goroutine is writing a batch
	wErrs   uint64
	drops   dropLog // which packets were not delivered, for a run's analysis
}

func newPipe(in, out *os.File, clk clock, pool *bufPool, sh *shaper) (*pipe, error) {
	t, err := newWakeTimer()
	if err != nil {
		return nil, err
	}
	return &pipe{in: in, out: out, clk: clk, pool: pool, timer: t, sh: sh}, nil
}

// start runs the reader and delivery goroutines until the files are closed.
func (p *pipe) start(wg *sync.WaitGroup) {
	wg.Add(2)
	go func() { defer wg.Done(); p.readLoop() }()
	go func() { defer wg.Done(); p.deliverLoop() }()
}

func (p *pipe) readLoop() {
	for {
		buf := p.pool.get()
		n, err := p.in.Read(buf)
		if err != nil {
			p.pool.put(buf)
			if errors.Is(err, os.ErrClosed) {
				return
			}
			time.Sleep(time.Millisecond) // transient (device going down): don't spin
			continue
		}
		p.handle(buf[:n])
	}
}

// handle runs one packet through the shaper and either writes it at once or puts it
// on the delay line.
func (p *pipe) handle(pkt []byte) {
	now := p.clk.now()
	p.mu.Lock()
	lost0 := p.sh.stats.Lost
	v := p.sh.admit(now, len(pkt))
	if v.n == 0 {
		why := "queue"
		if p.sh.stats.Lost > lost0 {
			why = "loss"
		}
		p.mu.Unlock()
		p.drops.add(describeDrop(pkt, why))
		p.pool.put(pkt)
		return
	}
	var dup []byte
	if v.n == 2 {
		dup = p.pool.get()[:len(pkt)]
		copy(dup, pkt)
	}
	if v.corrupt {
		corrupt(pkt, v.bit)
	}
	// Fast path: due now, nothing ahead of it, nothing being written.
	if v.n == 1 && v.at[0] <= now && p.line.len() == 0 && !p.writing {
		p.sh.stats.delivered(len(pkt), now, v.at[0])
		p.mu.Unlock()
		p.write(pkt)
		return
	}
	for i, b := range [][]byte{pkt, dup}[:v.n] {
		if p.line.len() >= maxDelayLine {
			p.sh.stats.QueueDropped++
			p.pool.put(b)
			continue
		}
		p.seq++
		p.line.push(pktItem{at: v.at[i], seq: p.seq, buf: b})
		if p.armed == 0 || v.at[i] < p.armed {
			p.armed = v.at[i]
			_ = p.timer.arm(v.at[i] - int64(timerLead))
		}
	}
	p.mu.Unlock()
}

func (p *pipe) write(b []byte) {
	if _, err := p.out.Write(b); err != nil {
		p.mu.Lock()
		p.wErrs++
		p.mu.Unlock()
	}
	p.pool.put(b)
}

func (p *pipe) deliverLoop() {
	var batch []pktItem
	for {
		if err := p.timer.wait(); err != nil {
			if errors.Is(err, os.ErrClosed) {
				p.drain()
				return
			}
			time.Sleep(time.Millisecond)
			continue
		}
		for {
			p.mu.Lock()
			p.armed = 0
			now := p.clk.now()
			due := now + int64(timerLead)
			batch = batch[:0]
			for p.line.len() > 0 && p.line.peek().at <= due {
				it := p.line.pop()
				p.sh.stats.delivered(len(it.buf), now, it.at)
				batch = append(batch, it)
			}
			if len(batch) == 0 {
				if p.line.len() > 0 {
					p.armed = p.line.peek().at
					_ = p.timer.arm(p.armed - int64(timerLead))
				}
				p.mu.Unlock()
				break
			}
			p.writing = true
			p.mu.Unlock()
			for _, it := range batch {
				p.write(it.buf)
			}
			p.mu.Lock()
			p.writing = false
			p.mu.Unlock()
		}
	}
}

// drain returns the buffers of packets never delivered.
func (p *pipe) drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.line.len() > 0 {
		p.pool.put(p.line.pop().buf)
	}
}

// set switches the pipe to a new impairment.
func (p *pipe) set(m Impairment) {
	p.mu.Lock()
	p.sh.apply(m, p.clk.now())
	p.mu.Unlock()
}

func (p *pipe) stats() DirectionStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sh.stats
	p.sh.q.expire(p.clk.now())
	s.Queued = p.sh.q.len()
	return s
}

// corrupt flips one bit chosen by r past the IP header (so the kernel does not drop
// the packet for a bad header checksum; the transport checksum catches it, as on a
// real link).
func corrupt(pkt []byte, r uint64) {
	if len(pkt) == 0 {
		return
	}
	hdr := 0
	switch pkt[0] >> 4 {
	case 4:
		hdr = int(pkt[0]&0x0f) * 4
	case 6:
		hdr = 40
	}
	if hdr >= len(pkt) {
		hdr = 0
	}
	bit := hdr*8 + int(r%uint64((len(pkt)-hdr)*8))
	pkt[bit/8] ^= 1 << (bit % 8)
}

// bufPool recycles packet buffers of one size.
type bufPool struct {
	size int
	p    sync.Pool
}

func newBufPool(size int) *bufPool {
	bp := &bufPool{size: size}
	bp.p.New = func() any { b := make([]byte, size); return &b }
	return bp
}

func (bp *bufPool) get() []byte { return (*bp.p.Get().(*[]byte))[:bp.size] }

func (bp *bufPool) put(b []byte) {
	if cap(b) < bp.size {
		return
	}
	b = b[:bp.size]
	bp.p.Put(&b)
}

// pktItem is a packet on the delay line.
type pktItem struct {
	at  int64
	seq uint64
	buf []byte
}

// pktHeap is a binary min-heap by delivery time, then arrival order.
type pktHeap struct{ items []pktItem }

func (h *pktHeap) len() int       { return len(h.items) }
func (h *pktHeap) peek() *pktItem { return &h.items[0] }

func (h *pktHeap) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (h *pktHeap) push(it pktItem) {
	h.items = append(h.items, it)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *pktHeap) pop() pktItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items[last] = pktItem{}
	h.items = h.items[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(l, m) {
			m = l
		}
		if r < last && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
