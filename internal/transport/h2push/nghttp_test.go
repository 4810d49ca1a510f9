package h2push_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/transport/h2push"
)

// nghttpRows runs `nghttp -ans` on url and returns the statistics rows: path → pushed.
// Pushed rows carry a '*' after the response time (nghttp's own marker).
func nghttpRows(t *testing.T, args ...string) (map[string]bool, string) {
	t.Helper()
	bin, err := exec.LookPath("nghttp")
	if err != nil {
		t.Skip("nghttp not installed (Debian nghttp2-client); `make test-deps` installs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"-ans"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("nghttp %v: %v\n%s", args, err, out)
	}
	rows := map[string]bool{}
	inStats := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == "id" && f[1] == "responseEnd" {
			inStats = true // the table: id responseEnd requestStart process code size path
			continue
		}
		if !inStats || len(f) < 7 {
			continue
		}
		path := f[len(f)-1]
		rows[path] = slices.Contains(f, "*")
		if f[len(f)-3] != "200" {
			t.Errorf("nghttp: %s answered %s", path, f[len(f)-3])
		}
	}
	return rows, string(out)
}

// TestNghttpReceivesPushes cross-checks each strategy with an outside client: nghttp
// over h2c (prior knowledge) and TLS h2 receives the promised resources (rows marked
// '*'), and with --no-push gets only what it asked for.
func TestNghttpReceivesPushes(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	for _, base := range []string{o.h2c, o.h2} {
		for _, tc := range strategyCases {
			t.Run(strings.SplitN(base, ":", 2)[0]+"/"+tc.strategy, func(t *testing.T) {
				rows, out := nghttpRows(t, base+tc.trigger+"?push="+tc.strategy)
				var pushed []string
				for path, star := range rows {
					if star {
						pushed = append(pushed, path)
					} else if !strings.HasPrefix(path, tc.trigger) {
						t.Errorf("nghttp requested %s itself", path)
					}
				}
				slices.Sort(pushed)
				if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(pushed, want) {
					t.Errorf("pushed rows %v\nwant %v\n%s", pushed, want, out)
				}
			})
		}
		t.Run("nopush", func(t *testing.T) {
			rows, out := nghttpRows(t, "--no-push", base+"/vod/test/manifest.mpd?push=all")
			if len(rows) != 1 {
				t.Errorf("with --no-push nghttp got %d rows\n%s", len(rows), out)
			}
		})
	}
}
