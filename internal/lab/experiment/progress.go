package experiment

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws one updating line: a bar, runs done of total, elapsed and ETA.
type progress struct {
	w     io.Writer
	total int
	start time.Time
	tty   bool
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) update(done int, what string) {
	if p.w == nil {
		return
	}
	const width = 30
	filled := width * done / max(p.total, 1)
	el := time.Since(p.start).Round(time.Second)
	eta := "?"
	if done > 0 {
		eta = (time.Duration(float64(time.Since(p.start)) / float64(done) * float64(p.total-done))).Round(time.Second).String()
	}
	line := fmt.Sprintf("[%s%s] %d/%d runs  %s elapsed  ETA %s  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, p.total, el, eta, what)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

func (p *progress) finish(done int) {
	if p.w == nil {
		return
	}
	p.update(done, "done")
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
