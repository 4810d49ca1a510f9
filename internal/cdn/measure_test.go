package cdn

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/layout"
)

// Measurement, not a test: STREAMBED_CDN_MEASURE=1 runs it (bench/cdn-shield.sh).
// STREAMBED_CDN_PLAYERS (default 50), STREAMBED_CDN_SECONDS (default 60),
// STREAMBED_CDN_KINDS (default nginx,varnish), STREAMBED_CDN_EDGES (default 0: the
// players use the shield; N: N edges of the same kind in front of the shield, the
// players spread over them), STREAMBED_CDN_OUT (a JSON file).
//
// Emulated live DASH players, as in the published shield test, fetch one channel
// through a shield: the MPD at start and again every minimumUpdatePeriod, then from
// the newest available segment on, audio and the top video rung of each segment as
// it becomes available. Players start spread over a tenth of the run. Counted: the
// requests and bytes at the shield (the players' side) and at the origin, per kind of
// object, and the origin requests per object.
func TestMeasureShieldReduction(t *testing.T) {
	if os.Getenv("STREAMBED_CDN_MEASURE") == "" {
		t.Skip("a 60 s measurement per cache, not a test: bench/cdn-shield.sh runs it (STREAMBED_CDN_MEASURE=1)")
	}
	players := envInt(t, "STREAMBED_CDN_PLAYERS", 50)
	run := time.Duration(envInt(t, "STREAMBED_CDN_SECONDS", 60)) * time.Second
	ks := kinds
	if v := os.Getenv("STREAMBED_CDN_KINDS"); v != "" {
		ks = nil
		for _, k := range strings.Split(v, ",") {
			ks = append(ks, Kind(k))
		}
	}
	edges := 0
	if os.Getenv("STREAMBED_CDN_EDGES") != "" {
		edges = envInt(t, "STREAMBED_CDN_EDGES", 0)
	}
	var results []measurement
	for _, k := range ks {
		org := startOrigin(t)
		shield := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, org.URL)})
		targets := []string{shield}
		if edges > 0 {
			targets = nil
			for range edges {
				targets = append(targets, startCache(t, Options{Kind: k, Role: Edge, Upstreams: upstreamsOf(t, shield)}))
			}
		}
		m := measureShield(t, org, targets, players, run)
		m.Cache, m.Edges = string(k), edges
		results = append(results, m)
		b, _ := json.MarshalIndent(m, "", "  ")
		t.Logf("%s\n", b)
	}
	if out := os.Getenv("STREAMBED_CDN_OUT"); out != "" {
		if err := fsutil.WriteJSONAtomic(out, results, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type kindCount struct {
	ShieldRequests int     `json:"shield_requests"`
	OriginRequests int     `json:"origin_requests"`
	ShieldBytes    int64   `json:"shield_bytes"`
	OriginBytes    int64   `json:"origin_bytes"`
	Objects        int     `json:"objects"`
	MaxPerObject   int     `json:"origin_requests_max_per_object"`
	Reduction      float64 `json:"request_reduction_percent"`
	// OriginStatuses are the origin's answers by status: a second request for an
	// object is usually a 404 for a segment asked for before it existed.
	OriginStatuses map[string]int `json:"origin_statuses,omitempty"`
}

type measurement struct {
	Cache           string               `json:"cache"`
	Edges           int                  `json:"edges"` // 0: players at the shield
	Players         int                  `json:"players"`
	Seconds         float64              `json:"seconds"`
	Errors          int                  `json:"errors"`
	ByKind          map[string]kindCount `json:"by_kind"`
	Total           kindCount            `json:"total"`
	ByteReduction   float64              `json:"byte_reduction_percent"`
	ShieldMbps      float64              `json:"shield_mbit_per_s"`
	OriginMbps      float64              `json:"origin_mbit_per_s"`
	BestReduction   float64              `json:"best_possible_request_reduction_percent"`
	MinUpdatePeriod string               `json:"mpd_minimum_update_period"`
}

// publicHost is the one name players reach the caches by, as a CDN's edges share its
// public host name. The caches key objects by host (manifests carry absolute URLs made
// from it), so edges reached under different names would each be a site of its own
// to the shield.
const publicHost = "cdn.streambed.test"

var minUpdate = regexp.MustCompile(`minimumUpdatePeriod="PT([0-9.]+)S"`)

// measureShield runs the players against targets (the shield, or edges in front of
// it), player i against targets[i % len].
func measureShield(t *testing.T, org *origin, targets []string, players int, run time.Duration) measurement {
	video, audio := org.tracks(t)
	tl := org.Channel.Timeline()
	mpdPath := "/live/loop/manifest.mpd"
	_, _, mpd := mustGet(t, org.URL+mpdPath)
	period := 2 * time.Second
	sub := minUpdate.FindSubmatch(mpd)
	if sub != nil {
		f, _ := strconv.ParseFloat(string(sub[1]), 64)
		period = time.Duration(f * float64(time.Second))
	}
	org0, _ := org.Count.Snapshot()
	codes0 := org.Count.Codes()
	type tally struct {
		requests map[string]int
		bytes    map[string]int64
		errors   int
	}
	var mu sync.Mutex
	total := tally{requests: map[string]int{}, bytes: map[string]int64{}}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range players {
		wg.Add(1)
		shield := targets[i%len(targets)]
		go func() {
			defer wg.Done()
			local := tally{requests: map[string]int{}, bytes: map[string]int64{}}
			defer func() {
				mu.Lock()
				for k, v := range local.requests {
					total.requests[k] += v
				}
				for k, v := range local.bytes {
					total.bytes[k] += v
				}
				total.errors += local.errors
				mu.Unlock()
			}()
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			fetch := func(kind, path string) {
				st, _, b, err := getAs(ctx, client, shield+path, publicHost)
				if ctx.Err() != nil {
					return // the run ended during the request
				}
				local.requests[kind]++
				local.bytes[kind] += int64(len(b))
				if err != nil || st != http.StatusOK {
					local.errors++
				}
			}
			// Arrivals spread over a tenth of the run, with a little jitter.
			wait(ctx, time.Duration(i)*run/10/time.Duration(players)+time.Duration(rand.IntN(100))*time.Millisecond)
			fetch("mpd", mpdPath)
			nextMPD := time.Now().Add(period)
			n := uint64(time.Since(tl.AvailabilityStart)/tl.SegmentDuration) - 1 // the newest complete
			for ctx.Err() == nil {
				fetch("video", layout.Segment(true, "loop", video, n))
				fetch("audio", layout.Segment(true, "loop", audio, n))
				n++
				wait(ctx, time.Until(tl.AvailabilityStart.Add(time.Duration(n+1)*tl.SegmentDuration)))
				if !time.Now().Before(nextMPD) {
					fetch("mpd", mpdPath)
					nextMPD = time.Now().Add(period)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	orgN, orgB := org.Count.Snapshot()
	codesN := org.Count.Codes()
	m := measurement{Players: players, Seconds: elapsed.Seconds(), Errors: total.errors, ByKind: map[string]kindCount{},
		MinUpdatePeriod: period.String()}
	for uri, n := range orgN {
		n -= org0[uri]
		kind := ""
		switch {
		case strings.HasPrefix(uri, mpdPath):
			kind = "mpd"
		case strings.Contains(uri, "/"+video+"/"):
			kind = "video"
		case strings.Contains(uri, "/"+audio+"/"):
			kind = "audio"
		}
		if kind == "" || n == 0 {
			continue
		}
		kc := m.ByKind[kind]
		kc.OriginRequests += n
		kc.OriginBytes += orgB[uri]
		kc.Objects++
		kc.MaxPerObject = max(kc.MaxPerObject, n)
		for code, k := range codesN[uri] {
			if k -= codes0[uri][code]; k > 0 {
				if kc.OriginStatuses == nil {
					kc.OriginStatuses = map[string]int{}
				}
				kc.OriginStatuses[strconv.Itoa(code)] += k
			}
		}
		m.ByKind[kind] = kc
	}
	kindsSeen := []string{"mpd", "video", "audio"}
	sort.Strings(kindsSeen)
	for _, k := range kindsSeen {
		kc := m.ByKind[k]
		kc.ShieldRequests, kc.ShieldBytes = total.requests[k], total.bytes[k]
		kc.Reduction = reduction(kc.ShieldRequests, kc.OriginRequests)
		m.ByKind[k] = kc
		m.Total.ShieldRequests += kc.ShieldRequests
		m.Total.OriginRequests += kc.OriginRequests
		m.Total.ShieldBytes += kc.ShieldBytes
		m.Total.OriginBytes += kc.OriginBytes
		m.Total.Objects += kc.Objects
		m.Total.MaxPerObject = max(m.Total.MaxPerObject, kc.MaxPerObject)
	}
	m.Total.Reduction = reduction(m.Total.ShieldRequests, m.Total.OriginRequests)
	m.ByteReduction = 100 * (1 - float64(m.Total.OriginBytes)/float64(max(m.Total.ShieldBytes, 1)))
	m.ShieldMbps = float64(m.Total.ShieldBytes) * 8 / elapsed.Seconds() / 1e6
	m.OriginMbps = float64(m.Total.OriginBytes) * 8 / elapsed.Seconds() / 1e6
	// One origin request per object is the best a shield can do.
	m.BestReduction = reduction(m.Total.ShieldRequests, m.Total.Objects)
	if m.Errors > 0 {
		t.Errorf("%d player requests failed", m.Errors)
	}
	return m
}

func reduction(shield, origin int) float64 {
	if shield == 0 {
		return 0
	}
	return 100 * (1 - float64(origin)/float64(shield))
}

func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
