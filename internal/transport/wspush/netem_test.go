//go:build linux

package wspush_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/lab/steplab"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// TestNetemStepDown: on an emulated link, a cap below the top rung's bitrate makes
// the server step down, with either policy: 2 Mbit/s for 6 s (both policies reach
// v360), then 300 kbit/s for 12 s (both step down to v180). Needs root (network
// namespaces); CI runs as root.
//
// It has no switches. The experiments of docs/results/wspush-adaptation.md (other
// ladders and steps, their JSON and plot) are the program
// internal/lab/wspushlab, over the same steplab.Run.
func TestNetemStepDown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces (CI runs as root)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("skipped: no /dev/net/tun")
	}
	phases := []steplab.Phase{{Rate: "2mbit", For: 6 * time.Second}, {Rate: "300kbit", For: 12 * time.Second}}
	asset := testmedia.Asset(t)
	for _, pol := range []string{wspush.PolicyTCP, wspush.PolicyBuffer} {
		t.Run(pol, func(t *testing.T) {
			tl, err := steplab.Run(context.Background(), steplab.Options{Asset: asset, Policy: pol, Phases: phases})
			if err != nil {
				t.Fatal(err)
			}
			capAt := phases[0].For.Seconds()
			var top, down bool
			for _, e := range tl.Events {
				if e.Type != "switch" {
					continue
				}
				if e.To == "v360" && e.T < capAt {
					top = true
				}
				if e.To == "v180" && e.T > capAt {
					down = true
					t.Logf("%s: stepped down %.1fs after the cap: %s", pol, e.T-capAt, e.Reason)
					break
				}
			}
			if !top {
				t.Errorf("%s never reached v360 on the 2 Mbit/s link: %+v", pol, tl.Events)
			}
			if !down {
				t.Errorf("%s did not step down under a 300 kbit/s cap: %+v", pol, tl.Events)
			}
		})
	}
}
