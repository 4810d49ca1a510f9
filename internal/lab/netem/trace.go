package netem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// TraceMTU is the bytes one Mahimahi delivery opportunity carries.
const TraceMTU = 1500

// Trace is a Mahimahi packet-delivery trace: each line of the file is a millisecond
// timestamp at which the link can deliver one 1500-byte packet (repeat a timestamp
// for several). The trace repeats with a period equal to its last timestamp, as
// Mahimahi's link shell does.
type Trace struct {
	Path   string  `json:"path"`
	Millis []int64 `json:"millis"` // non-decreasing opportunity times in ms
	Period int64   `json:"period"` // ms
}

// LoadTrace reads a Mahimahi trace file.
func LoadTrace(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	t.Path = path
	return t, nil
}

// ParseTrace reads a trace; blank lines and lines starting with # are skipped.
func ParseTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	t := &Trace{}
	line := 0
	var last int64
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("line %d: %q is not a millisecond timestamp", line, s)
		}
		if v < last {
			return nil, fmt.Errorf("line %d: timestamp %d goes back in time (after %d)", line, v, last)
		}
		last = v
		t.Millis = append(t.Millis, v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.Millis) == 0 {
		return nil, errors.New("no timestamps")
	}
	t.Period = last
	if t.Period <= 0 {
		return nil, errors.New("last timestamp must be positive: it is the period of the trace")
	}
	return t, nil
}

// Mean is the trace's average rate.
func (t *Trace) Mean() Rate {
	if t == nil || t.Period == 0 {
		return 0
	}
	return Rate(float64(len(t.Millis)) * TraceMTU * 8 / (float64(t.Period) / 1000))
}

// ConstantTrace makes a trace of a constant rate over period ms (for tests and
// examples): opportunities spread evenly.
func ConstantTrace(r Rate, periodMs int64) *Trace {
	n := int64(float64(r) * float64(periodMs) / 1000 / (TraceMTU * 8))
	t := &Trace{Period: periodMs}
	for i := int64(1); i <= n; i++ {
		t.Millis = append(t.Millis, i*periodMs/n)
	}
	return t
}

// Format writes the trace in Mahimahi's format.
func (t *Trace) Format() []byte {
	var b bytes.Buffer
	for _, ms := range t.Millis {
		b.WriteString(strconv.FormatInt(ms, 10))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
