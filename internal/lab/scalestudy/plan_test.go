package main

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/cdn"
)

var testAddrs = map[string]netip.Addr{
	hostIngest: netip.MustParseAddr("10.77.0.1"),
	hostOrigin: netip.MustParseAddr("10.77.0.2"),
	hostEdge:   netip.MustParseAddr("10.77.0.3"),
	hostClient: netip.MustParseAddr("10.77.0.4"),
}

// argAfter is the value of flag name in argv.
func argAfter(argv []string, name string) string {
	i := slices.Index(argv, name)
	if i < 0 || i+1 >= len(argv) {
		return ""
	}
	return argv[i+1]
}

// TestPlanWiring: each configuration puts the origin, the encoder, the caches and the
// viewers where the published set-ups have them, and wires each to the right
// upstream.
func TestPlanWiring(t *testing.T) {
	ld := Load{Workers: 50, Ramp: 30 * time.Second, Duration: time.Minute}
	dvr := UseCase{Name: "archive-dvr", ShiftShare: 0.5, Shift: 20 * time.Second}
	for _, tc := range []struct {
		cell        Cell
		originHost  string
		cacheUp     string // the cache's upstream, "" for none
		edgeOrigin  bool
		readyURL    string
		timeshifted bool
	}{
		{Cell{Config: OriginAtEdge, UseCase: UseCase{Name: "pure-live"}}, hostEdge, "", false, "http://10.77.0.3:8080/live/ch/manifest.mpd", false},
		{Cell{Config: CentralCache, UseCase: UseCase{Name: "archive"}}, hostOrigin, "10.77.0.2:8080", false, "http://10.77.0.3:8080/live/ch/manifest.mpd", false},
		{Cell{Config: EdgeOriginCache, UseCase: dvr, Cache: cdn.Varnish}, hostOrigin, "127.0.0.1:8081", true, "http://127.0.0.1:8081/live/ch/manifest.mpd", true},
	} {
		t.Run(tc.cell.Name(), func(t *testing.T) {
			p, err := plan(tc.cell, testAddrs, "/bin/streambed", "/w", ld)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := p.proc(RoleOrigin)
			if o.Host != tc.originHost || !o.Server || o.Stage != 0 {
				t.Errorf("origin in %s (server %v, stage %d), want %s, a server started first", o.Host, o.Server, o.Stage, tc.originHost)
			}
			if got, want := argAfter(o.Argv, "--ingest"), "ch,preset="+tc.cell.UseCase.Name+",token=scalestudy,segment=1.92s"; got != want {
				t.Errorf("publishing point %q, want %q", got, want)
			}
			if o.Metrics != netip.AddrPortFrom(testAddrs[tc.originHost], port).String() {
				t.Errorf("origin metrics at %s", o.Metrics)
			}
			enc, _ := p.proc(RoleEncoder)
			if enc.Host != hostIngest || enc.Stage != 1 || argAfter(enc.Argv, "--to") != "http://"+o.Metrics+"/ingest/ch" || argAfter(enc.Argv, "--ladder") != "published" {
				t.Errorf("encoder %v in %s", enc.Argv, enc.Host)
			}
			c, hasCache := p.proc(RoleCache)
			if hasCache != (tc.cacheUp != "") {
				t.Fatalf("cache present %v, want %v", hasCache, tc.cacheUp != "")
			}
			if hasCache {
				if c.Host != hostEdge || c.Cache.Listen != "0.0.0.0:8080" || len(c.Cache.Upstreams) != 1 || c.Cache.Upstreams[0].String() != tc.cacheUp {
					t.Errorf("cache %+v in %s, want on the edge in front of %s", c.Cache, c.Host, tc.cacheUp)
				}
				if c.Cache.Kind != tc.cell.cache() {
					t.Errorf("cache program %s, want %s", c.Cache.Kind, tc.cell.cache())
				}
			}
			e, hasEdge := p.proc(RoleEdgeOrigin)
			if hasEdge != tc.edgeOrigin {
				t.Fatalf("edge origin present %v, want %v", hasEdge, tc.edgeOrigin)
			}
			if hasEdge {
				if e.Host != hostEdge || e.Stage != 2 || argAfter(e.Argv, "--pull") != "ch=http://10.77.0.2:8080/live/ch/manifest.mpd" ||
					argAfter(e.Argv, "--http") != "127.0.0.1:8081" {
					t.Errorf("edge origin %v in %s (stage %d): want edge mode pulling the central origin, behind the cache", e.Argv, e.Host, e.Stage)
				}
				if c.Stage != 2 {
					t.Error("the cache of configuration 3 starts before its edge origin")
				}
			}
			if p.ReadyURL != tc.readyURL || p.ViewerURL != "http://10.77.0.3:8080/live/ch/manifest.mpd" {
				t.Errorf("ready %s, viewers %s", p.ReadyURL, p.ViewerURL)
			}
			if p.OriginURL != "http://"+o.Metrics+"/live/ch/manifest.mpd" || p.OriginHost != tc.originHost {
				t.Errorf("origin readiness %s from %s", p.OriginURL, p.OriginHost)
			}
			l, _ := p.proc(RoleLoad)
			if l.Host != hostClient || l.Server || argAfter(l.Argv, "--mode") != "dash-live" || argAfter(l.Argv, "--workers") != "50" ||
				argAfter(l.Argv, "--ramp") != "30s" || argAfter(l.Argv, "--duration") != "1m0s" || !slices.Contains(l.Argv, p.ViewerURL) {
				t.Errorf("load %v in %s", l.Argv, l.Host)
			}
			if got := argAfter(l.Argv, "--timeshift-share") != ""; got != tc.timeshifted {
				t.Errorf("time-shifted viewers %v, want %v (%v)", got, tc.timeshifted, l.Argv)
			}
			if tc.timeshifted && (argAfter(l.Argv, "--timeshift-share") != "0.5" || argAfter(l.Argv, "--timeshift") != "20s") {
				t.Errorf("time shift flags %v", l.Argv)
			}
		})
	}
}

func TestPlanRejects(t *testing.T) {
	if _, err := plan(Cell{Config: 4, UseCase: UseCase{Name: "archive"}}, testAddrs, "sb", "/w", Load{}); err == nil {
		t.Error("configuration 4 accepted")
	}
	if _, err := plan(Cell{Config: 1, UseCase: UseCase{Name: "archive"}}, map[string]netip.Addr{}, "sb", "/w", Load{}); err == nil {
		t.Error("a plan without host addresses accepted")
	}
}

// TestCellsAlternate: configurations alternate within each use case and repetition,
// and configuration 1 (no cache) runs once whatever the caches.
func TestCellsAlternate(t *testing.T) {
	o := options{reps: 2, useCases: []string{"pure-live", "archive-dvr"}, configs: []Config{1, 2, 3},
		caches: []cdn.Kind{cdn.Nginx, cdn.Varnish}, shiftShare: 0.5, shift: 20 * time.Second}
	cs, err := cells(o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name())
	}
	want := "c1-pure-live-r1 c2-pure-live-r1 c2-varnish-pure-live-r1 c3-pure-live-r1 c3-varnish-pure-live-r1 " +
		"c1-archive-dvr-r1 c2-archive-dvr-r1 c2-varnish-archive-dvr-r1 c3-archive-dvr-r1 c3-varnish-archive-dvr-r1 " +
		"c1-pure-live-r2 c2-pure-live-r2 c2-varnish-pure-live-r2 c3-pure-live-r2 c3-varnish-pure-live-r2 " +
		"c1-archive-dvr-r2 c2-archive-dvr-r2 c2-varnish-archive-dvr-r2 c3-archive-dvr-r2 c3-varnish-archive-dvr-r2"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("cells\n%s\nwant\n%s", got, want)
	}
	if cs[5].UseCase.ShiftShare != 0.5 || cs[0].UseCase.ShiftShare != 0 {
		t.Error("only archive-dvr viewers are time-shifted")
	}
	o.useCases = []string{"vod"}
	if _, err := cells(o); err == nil {
		t.Error("an unknown use case accepted")
	}
}

// TestTopology: the chain ingest — origin — WAN — edge — client, the WAN link with
// its delay.
func TestTopology(t *testing.T) {
	topo := topology(Links{WANDelay: 20 * time.Millisecond, AccessDelay: time.Millisecond})
	var links []string
	for _, l := range topo.Links {
		links = append(links, l.A+"-"+l.B+"@"+time.Duration(l.Profile.Forward.Delay).String()+"/"+time.Duration(l.Profile.Reverse.Delay).String())
	}
	if got, want := strings.Join(links, " "), "ingest-origin@1ms/1ms origin-edge@20ms/20ms edge-client@1ms/1ms"; got != want {
		t.Errorf("links %s, want %s", got, want)
	}
}

// TestPlanViewerTracks: the viewers' tracks and MPD interval reach the load generator.
func TestPlanViewerTracks(t *testing.T) {
	p, err := plan(Cell{Config: CentralCache, UseCase: UseCase{Name: "pure-live"}}, testAddrs, "sb", "/w",
		Load{Workers: 1000, Ramp: time.Second, Duration: time.Minute, Video: "v144", Audio: "a64", ManifestEvery: 30720 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := p.proc(RoleLoad)
	if argAfter(l.Argv, "--video") != "v144" || argAfter(l.Argv, "--audio") != "a64" || argAfter(l.Argv, "--manifest-every") != "30.72s" {
		t.Errorf("load %v", l.Argv)
	}
}
