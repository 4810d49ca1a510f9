package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/streambed/streambed/internal/cdn"
	"github.com/streambed/streambed/internal/lab/netem"
)

// The four namespace hosts of the published set-ups: the encoder's, the central
// origin's (behind the WAN), the edge (near viewers) and the viewers'.
const (
	hostIngest = "ingest"
	hostOrigin = "origin"
	hostEdge   = "edge"
	hostClient = "client"
)

// Ports: every origin and cache listens on 8080 in its host, except the edge origin
// of configuration 3, which sits behind the cache on the same host.
const (
	port         = 8080
	edgeOriginPt = 8081
	channel      = "ch"
	ingestToken  = "scalestudy"
	// segment is the published ladder's GOP (48 frames at 25 fps): the publishing
	// point numbers segments by it.
	segment = "1.92s"
)

// Config is one of the published set-ups.
type Config int

const (
	// OriginAtEdge (configuration 1): the encoder pushes over the WAN to an origin on
	// the edge host; viewers pull from it directly, no cache.
	OriginAtEdge Config = 1
	// CentralCache (configuration 2): the origin stays central; an nginx cache on the
	// edge host, across the WAN from it, serves viewers.
	CentralCache Config = 2
	// EdgeOriginCache (configuration 3): the central origin takes the ingest; an origin
	// in edge mode (serve --pull) on the edge host packages the channel again from it,
	// with an nginx cache in front of it.
	EdgeOriginCache Config = 3
)

func (c Config) String() string {
	switch c {
	case OriginAtEdge:
		return "1 origin at the edge, no cache"
	case CentralCache:
		return "2 central origin + edge cache"
	case EdgeOriginCache:
		return "3 edge origin + edge cache"
	}
	return "config " + strconv.Itoa(int(c))
}

// UseCase is one of the published use cases: a publishing-point preset, and for
// DVR a share of viewers playing behind the live edge.
type UseCase struct {
	Name       string  // the preset: pure-live, archive, archive-dvr
	ShiftShare float64 // share of sessions time-shifted
	Shift      time.Duration
}

// useCases: the presets of internal/publish. archive-dvr's viewers are partly
// time-shifted, within the window the channel has had time to build.
func useCases(shiftShare float64, shift time.Duration) []UseCase {
	return []UseCase{
		{Name: "pure-live"},
		{Name: "archive"},
		{Name: "archive-dvr", ShiftShare: shiftShare, Shift: shift},
	}
}

// Links are the emulated links of the set-up.
type Links struct {
	WANDelay    time.Duration // one way, origin ↔ edge
	WANRate     netem.Rate
	AccessDelay time.Duration // one way, edge ↔ client and ingest ↔ origin
	AccessRate  netem.Rate
}

// topology: ingest — origin — (WAN) — edge — client. Hosts without a direct link
// (the encoder and an origin on the edge; viewers and the central origin) reach each
// other through the chain, so in configuration 1 the ingest crosses the WAN.
func topology(l Links) netem.Topology {
	access := netem.Symmetric(netem.Impairment{Rate: netem.ConstantRate(l.AccessRate), Delay: netem.Duration(l.AccessDelay),
		Queue: netem.Queue{Packets: 1000}})
	wan := netem.Symmetric(netem.Impairment{Rate: netem.ConstantRate(l.WANRate), Delay: netem.Duration(l.WANDelay),
		Queue: netem.Queue{Packets: 1000}})
	return netem.Topology{
		Hosts: []netem.HostSpec{{Name: hostIngest}, {Name: hostOrigin}, {Name: hostEdge}, {Name: hostClient}},
		Links: []netem.LinkSpec{
			{A: hostIngest, B: hostOrigin, Profile: access},
			{A: hostOrigin, B: hostEdge, Profile: wan},
			{A: hostEdge, B: hostClient, Profile: access},
		},
		Server: hostOrigin,
	}
}

// Role names a process of a cell in the results.
type Role string

const (
	RoleOrigin     Role = "origin"      // takes the ingest (central, or on the edge in config 1)
	RoleEdgeOrigin Role = "edge-origin" // config 3: edge mode, pulls from the origin
	RoleCache      Role = "cache"       // nginx (or Varnish) on the edge host
	RoleEncoder    Role = "encoder"
	RoleLoad       Role = "load"
)

// Proc is one process of a cell: where it runs and what it runs.
type Proc struct {
	Role Role
	Host string
	Argv []string // for the cache: filled by the runner from Cache
	// Cache, for RoleCache: the nginx or Varnish configuration written by internal/cdn.
	Cache *cdn.Options
	// Metrics is the origin's own address inside Host, where /metrics is read.
	Metrics string
	Server  bool // a server (pinned to the servers' CPUs), not a load or encoder process
	// Stage orders the start: the origin (0); the encoder (1) once the origin answers
	// (an encoder that cannot connect exits); the edge origin and its cache (2) once
	// the origin lists the channel (--pull reads the upstream MPD when it starts).
	Stage int
}

// Cell is one configuration × use case × repetition.
type Cell struct {
	Config  Config
	UseCase UseCase
	Rep     int
	Cache   cdn.Kind // the edge cache (configurations 2 and 3); nginx as published
}

func (c Cell) Name() string {
	if c.Cache != "" && c.Cache != cdn.Nginx {
		return fmt.Sprintf("c%d-%s-%s-r%d", c.Config, c.Cache, c.UseCase.Name, c.Rep)
	}
	return fmt.Sprintf("c%d-%s-r%d", c.Config, c.UseCase.Name, c.Rep)
}

// ConfigName is the configuration with its cache program.
func (c Cell) ConfigName() string {
	if c.Config == OriginAtEdge {
		return c.Config.String()
	}
	return fmt.Sprintf("%s (%s)", c.Config, c.cache())
}

func (c Cell) cache() cdn.Kind {
	if c.Cache == "" {
		return cdn.Nginx
	}
	return c.Cache
}

// Load is the workload of a cell: the published 0 → N workers of the DASH live loop.
type Load struct {
	Workers  int
	Ramp     time.Duration
	Duration time.Duration
	// Video and Audio name the tracks viewers fetch ("": the top rung and 128k);
	// ManifestEvery replaces the MPD's minimumUpdatePeriod as the reload interval
	// (the published mix reloads it about every 16 segments).
	Video, Audio  string
	ManifestEvery time.Duration
}

// Plan is what runs in a cell, with the URL viewers use.
type Plan struct {
	Procs     []Proc
	ViewerURL string // the MPD the load generator plays
	// The origin's own MPD lists the channel once the encoder's first segments are
	// in (read from OriginHost); stage 2 starts then.
	OriginURL  string
	OriginHost string
	ReadyURL   string // an MPD that lists segments once the channel is servable end to end
	ReadyHost  string
}

// plan lays a cell's processes out on the hosts. bin is the streambed binary; dir
// a folder of the cell's own (data folders, cache, load report).
func plan(c Cell, addr map[string]netip.Addr, bin, dir string, ld Load) (Plan, error) {
	for _, h := range []string{hostIngest, hostOrigin, hostEdge, hostClient} {
		if !addr[h].IsValid() {
			return Plan{}, fmt.Errorf("no address for host %s", h)
		}
	}
	hp := func(h string, p int) string { return netip.AddrPortFrom(addr[h], uint16(p)).String() }
	serve := func(listen, data string, extra ...string) []string {
		return append([]string{bin, "serve", "--http", listen, "--https", "", "--no-demo", "--channel", "",
			"--log-level", "warn", "--data-dir", data}, extra...)
	}
	ingest := fmt.Sprintf("%s,preset=%s,token=%s,segment=%s", channel, c.UseCase.Name, ingestToken, segment)
	originHost := hostOrigin
	if c.Config == OriginAtEdge {
		originHost = hostEdge
	}
	var p Plan
	p.Procs = append(p.Procs, Proc{Role: RoleOrigin, Host: originHost, Server: true, Metrics: hp(originHost, port),
		Argv: serve("0.0.0.0:"+strconv.Itoa(port), dir+"/origin", "--ingest", ingest)})
	p.Procs = append(p.Procs, Proc{Role: RoleEncoder, Host: hostIngest, Stage: 1,
		Argv: []string{bin, "encode", "live", "--replay", "--ladder", "published",
			"--to", "http://" + hp(originHost, port) + "/ingest/" + channel, "--token", ingestToken}})
	mpd := "/live/" + channel + "/manifest.mpd"
	p.OriginURL, p.OriginHost = "http://"+hp(originHost, port)+mpd, originHost
	switch c.Config {
	case OriginAtEdge:
		p.ReadyURL, p.ReadyHost = "http://"+hp(hostEdge, port)+mpd, hostEdge
	case CentralCache:
		p.Procs = append(p.Procs, Proc{Role: RoleCache, Host: hostEdge, Server: true,
			Cache: &cdn.Options{Kind: c.cache(), Role: cdn.Shield, Listen: "0.0.0.0:" + strconv.Itoa(port), Dir: dir + "/cache",
				Upstreams: []cdn.Upstream{{Host: addr[hostOrigin].String(), Port: port}}}})
		p.ReadyURL, p.ReadyHost = "http://"+hp(hostEdge, port)+mpd, hostEdge
	case EdgeOriginCache:
		local := "127.0.0.1:" + strconv.Itoa(edgeOriginPt)
		p.Procs = append(p.Procs, Proc{Role: RoleEdgeOrigin, Host: hostEdge, Server: true, Metrics: local, Stage: 2,
			Argv: serve(local, dir+"/edge-origin", "--pull", channel+"=http://"+hp(hostOrigin, port)+mpd)})
		p.Procs = append(p.Procs, Proc{Role: RoleCache, Host: hostEdge, Server: true, Stage: 2,
			Cache: &cdn.Options{Kind: c.cache(), Role: cdn.Edge, Listen: "0.0.0.0:" + strconv.Itoa(port), Dir: dir + "/cache",
				Upstreams: []cdn.Upstream{{Host: "127.0.0.1", Port: edgeOriginPt}}}})
		// Ready when the edge origin itself lists segments (it pulls once the central
		// origin has some).
		p.ReadyURL, p.ReadyHost = "http://"+local+mpd, hostEdge
	default:
		return Plan{}, fmt.Errorf("configuration %d: want 1, 2 or 3", c.Config)
	}
	p.ViewerURL = "http://" + hp(hostEdge, port) + mpd
	load := []string{bin, "load", "--mode", "dash-live", p.ViewerURL,
		"--workers", strconv.Itoa(ld.Workers), "--ramp", ld.Ramp.String(), "--duration", ld.Duration.String(),
		"--host", hostClient, "--out", dir + "/load"}
	if ld.Video != "" {
		load = append(load, "--video", ld.Video)
	}
	if ld.Audio != "" {
		load = append(load, "--audio", ld.Audio)
	}
	if ld.ManifestEvery > 0 {
		load = append(load, "--manifest-every", ld.ManifestEvery.String())
	}
	if u := c.UseCase; u.ShiftShare > 0 {
		load = append(load, "--timeshift-share", strconv.FormatFloat(u.ShiftShare, 'g', -1, 64), "--timeshift", u.Shift.String())
	}
	p.Procs = append(p.Procs, Proc{Role: RoleLoad, Host: hostClient, Argv: load})
	return p, nil
}

// proc returns the plan's process of role r.
func (p Plan) proc(r Role) (Proc, bool) {
	for _, q := range p.Procs {
		if q.Role == r {
			return q, true
		}
	}
	return Proc{}, false
}
