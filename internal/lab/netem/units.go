package netem

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Rate is a link rate in bits per second. Zero means unlimited.
type Rate float64

// Common rates.
const (
	Kbit Rate = 1e3
	Mbit Rate = 1e6
	Gbit Rate = 1e9
)

// ParseRate reads a rate in the forms people write: "2mbit", "10Mbit/s", "2.5 Mbps",
// "500kbit", "1gbit", "1500000" (bits/s), "1MB/s" (bytes/s). A unit with "byte" or a
// capital B counts bytes (note: tc's "mbps" means megabytes; here "Mbps" is megabits,
// as most people mean it). "0", "" and "unlimited" mean no limit.
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "unlimited") || strings.EqualFold(t, "none") {
		return 0, nil
	}
	num, unit := splitNumber(t)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("rate %q: want a number and a unit such as 2mbit or 10Mbit/s", s)
	}
	unit = strings.TrimSpace(unit)
	if unit == "" {
		return Rate(v), nil
	}
	bytes := strings.Contains(unit, "B") || strings.Contains(strings.ToLower(unit), "byte")
	u := strings.ToLower(unit)
	u = strings.TrimSuffix(u, "/s")
	u = strings.TrimSuffix(u, "ps")
	u = strings.TrimSuffix(u, "its")
	u = strings.TrimSuffix(u, "it")
	u = strings.TrimSuffix(u, "ytes")
	u = strings.TrimSuffix(u, "yte")
	u = strings.TrimSuffix(u, "b")
	mult := 1.0
	switch u {
	case "":
	case "k":
		mult = 1e3
	case "m":
		mult = 1e6
	case "g":
		mult = 1e9
	case "ki":
		mult = 1 << 10
	case "mi":
		mult = 1 << 20
	case "gi":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("rate %q: unknown unit %q (use bit, kbit, mbit, gbit, or B/s forms)", s, unit)
	}
	if bytes {
		mult *= 8
	}
	return Rate(v * mult), nil
}

// String writes the rate the way ParseRate reads it.
func (r Rate) String() string {
	switch {
	case r <= 0:
		return "unlimited"
	case r >= Gbit && math.Mod(float64(r), 1e6) == 0:
		return trimFloat(float64(r)/1e9) + "gbit"
	case r >= Mbit:
		return trimFloat(float64(r)/1e6) + "mbit"
	case r >= Kbit:
		return trimFloat(float64(r)/1e3) + "kbit"
	}
	return trimFloat(float64(r)) + "bit"
}

// UnmarshalYAML accepts a string with a unit or a plain number of bits per second.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = v
	return nil
}

// MarshalYAML writes the rate with a unit.
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// Size is a byte count. ParseSize reads "1500", "64kb", "32KiB", "1mb", "256kbit"
// (k, kb, KB and KiB are all 1024, as tc counts; "bit" units are divided by 8).
type Size int64

// ParseSize reads a byte count with an optional unit.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	num, unit := splitNumber(t)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: want a number and an optional unit such as 1500, 64kb or 32KiB", s)
	}
	u := strings.ToLower(strings.TrimSpace(unit))
	bits := strings.HasSuffix(u, "bit")
	u = strings.TrimSuffix(u, "bit")
	u = strings.TrimSuffix(u, "bytes")
	u = strings.TrimSuffix(u, "byte")
	u = strings.TrimSuffix(u, "ib")
	u = strings.TrimSuffix(u, "b")
	mult := 1.0
	switch u {
	case "":
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	if bits {
		mult /= 8
	}
	return Size(math.Round(v * mult)), nil
}

// UnmarshalYAML accepts a string with a unit or a plain number of bytes.
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*z = v
	return nil
}

// MarshalYAML writes the size as a plain number of bytes.
func (z Size) MarshalYAML() (any, error) { return int64(z), nil }

// Percent is a probability written in percent: 1 means 1 %, so 0.01 of packets.
type Percent float64

// ParsePercent reads "1", "1%", "0.2 %". Numbers are percent.
func ParsePercent(s string) (Percent, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	if t == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
		return 0, fmt.Errorf("percentage %q: want a number from 0 to 100, such as 1 or 0.2%%", s)
	}
	return Percent(v), nil
}

// Fraction is the probability as a number from 0 to 1.
func (p Percent) Fraction() float64 { return float64(p) / 100 }

// UnmarshalYAML accepts "0.2%" or 0.2 (both mean 0.2 %).
func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParsePercent(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*p = v
	return nil
}

// MarshalYAML writes the percentage with a % sign.
func (p Percent) MarshalYAML() (any, error) { return trimFloat(float64(p)) + "%", nil }

// Duration is a time.Duration that YAML reads as "25ms", "1.5s" or a plain number of
// milliseconds.
type Duration time.Duration

// ParseDuration reads "25ms", "1.5s", "200us" or a plain number of milliseconds.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		if v < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return time.Duration(v * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(strings.ReplaceAll(t, " ", ""))
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a number and a unit such as 25ms or 1.5s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// UnmarshalYAML accepts "25ms" or 25 (milliseconds).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration in Go's form ("25ms").
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func splitNumber(s string) (num, unit string) {
	i := strings.IndexFunc(s, func(r rune) bool {
		return !(unicode.IsDigit(r) || r == '.' || r == '-' || r == '+')
	})
	if i < 0 {
		return s, ""
	}
	return strings.TrimSpace(s[:i]), s[i:]
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
