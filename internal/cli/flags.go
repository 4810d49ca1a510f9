package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// secondsOrDuration is a duration flag that also takes plain seconds, as `ffmpeg -t`
// does: "20" is 20 s, "1.5" is 1.5 s, "2m" is two minutes.
type secondsOrDuration struct{ d *time.Duration }

func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(secondsOrDuration{p}, name, usage)
}

// durationFlag is flag.Duration that also takes plain seconds: every command's
// duration flags read "20" as 20 s.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	if !strings.Contains(usage, "`") {
		usage += " (`seconds`, or a duration such as 500ms or 1m30s)" // -name seconds in the help
	}
	durationVar(fs, p, name, value, usage)
	return p
}

func (s secondsOrDuration) String() string {
	if s.d == nil || *s.d == 0 {
		return "0s"
	}
	return s.d.String()
}

func (s secondsOrDuration) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 {
			return fmt.Errorf("%q: a duration cannot be negative", v)
		}
		*s.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration: give seconds (20) or a unit (20s, 1m30s, 500ms)", v)
	}
	*s.d = d
	return nil
}
