package dash

import (
	"fmt"
	"strings"
	"time"
)

// formatDuration writes d as an xs:duration with hours, minutes and seconds, as MPDs
// use it: PT0S, PT2S, PT1M30.5S, PT1H0.04S. Fractions keep every significant
// digit down to the nanosecond. Negative durations are written as PT0S.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return "PT0S"
	}
	var b strings.Builder
	b.WriteString("PT")
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dM", m)
		d -= m * time.Minute
	}
	if d > 0 || b.Len() == 2 {
		fmt.Fprintf(&b, "%d", d/time.Second)
		if frac := d % time.Second; frac > 0 {
			b.WriteString(strings.TrimRight(fmt.Sprintf(".%09d", frac), "0"))
		}
		b.WriteByte('S')
	}
	return b.String()
}

// formatDateTime writes t as an xs:dateTime in UTC (RFC 3339 with a Z), with the
// fraction of a second only when there is one (to the millisecond).
func formatDateTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.999Z07:00")
}
