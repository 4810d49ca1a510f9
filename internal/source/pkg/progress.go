package pkg

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressBar shows encoding progress: a redrawn bar on a terminal, otherwise one
// line about every 10%.
type progressBar struct {
	mu     sync.Mutex
	w      io.Writer // nil: quiet
	tty    bool
	total  time.Duration
	label  string
	decile int
	drawn  bool
	last   time.Time
	speed  string // the last speed FFmpeg reported
}

func newProgressBar(w io.Writer, label string, total time.Duration) *progressBar {
	return &progressBar{w: w, tty: isTerminal(w), total: total, label: label, decile: -1}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progressBar) update(done time.Duration, speed string) {
	if p == nil || p.w == nil || p.total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	frac := min(max(float64(done)/float64(p.total), 0), 1)
	pct := int(frac * 100)
	switch {
	case speed != "" && speed != "N/A":
		p.speed = speed
	case p.speed != "":
		speed = p.speed
	default:
		speed = "-"
	}
	if p.tty {
		if time.Since(p.last) < 100*time.Millisecond && frac < 1 {
			return
		}
		p.last = time.Now()
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r%s [%s%s] %3d%%  %s / %s  speed %s \x1b[K", p.label,
			strings.Repeat("#", n), strings.Repeat("-", width-n), pct,
			fmtSecs(done), fmtSecs(p.total), speed)
		p.drawn = true
		return
	}
	if d := pct / 10; d > p.decile {
		p.decile = d
		fmt.Fprintf(p.w, "%s %3d%%  %s / %s  speed %s\n", p.label, pct, fmtSecs(done), fmtSecs(p.total), speed)
	}
}

// finish ends the bar after FFmpeg succeeded, at the time it reached last.
func (p *progressBar) finish() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}

func fmtSecs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
