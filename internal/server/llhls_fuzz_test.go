package server

import (
	"errors"
	"net/url"
	"testing"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// FuzzParseReload feeds raw query strings to the LL-HLS delivery directive parser: it
// never panics, refuses only with a bad request, and what it accepts is in range and
// consistent (a part only with a segment) and is what the query says.
func FuzzParseReload(f *testing.F) {
	for _, s := range []string{"", "_HLS_msn=1", "_HLS_msn=12&_HLS_part=3", "_HLS_msn=1&_HLS_part=2&_HLS_skip=YES",
		"_HLS_skip=v2", "_HLS_part=1", "_HLS_msn=-1", "_HLS_msn=18446744073709551616", "_HLS_msn=1&_HLS_msn=2",
		"_HLS_msn=1&_HLS_part=600001", "_HLS_msn=%31", "nowMS=1&_HLS_msn=0", "_HLS_msn=1;_HLS_part=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return // net/http hands handlers what it parsed; a query it cannot parse has no directives
		}
		rl, err := parseReload(q)
		if err != nil {
			if !errors.Is(err, media.ErrBadRequest) {
				t.Fatalf("%q: %v is not a bad request", raw, err)
			}
			return
		}
		if rl.hasPart && !rl.block || rl.part < 0 || rl.part > layout.MaxPart {
			t.Fatalf("%q: accepted %+v", raw, rl)
		}
		if rl.block != (q.Get("_HLS_msn") != "" || q.Has("_HLS_msn")) || rl.skip != q.Has("_HLS_skip") {
			t.Fatalf("%q: %+v does not say what the query does", raw, rl)
		}
	})
}
