package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/streambed/streambed/internal/lab/load"
)

// usage is CPU time and resident memory of a process and its descendants (nginx's
// master and workers) at one moment.
type usage struct {
	CPU float64 // seconds, user + system
	RSS int64   // bytes
}

// procTree samples pid and every process below it. A process that exits between
// listing and reading is skipped: the tree is read as it is now.
func procTree(pid int) (usage, error) {
	var u usage
	pids := append([]int{pid}, descendants(pid)...)
	for i, p := range pids {
		cpu, rss, err := load.ProcStat(p)
		if err != nil {
			if i == 0 {
				return usage{}, fmt.Errorf("process %d: %w", pid, err)
			}
			continue
		}
		u.CPU += cpu
		u.RSS += rss
	}
	return u, nil
}

// descendants lists the processes below pid, from /proc/*/stat's parent field.
func descendants(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if pp, ok := parentOf(string(b)); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, children[p]...)
		queue = append(queue, children[p]...)
	}
	return out
}

// parentOf reads field 4 (ppid) of /proc/PID/stat; the command name (field 2) is in
// parentheses and may hold spaces.
func parentOf(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// mediaKinds are the origin's request kinds that are media requests (not /metrics,
// /api, /time or ingest).
var mediaKinds = []string{"manifest", "init", "segment", "part"}

// originCounts are an origin's requests by kind (any status) and response bytes, from
// its own /metrics.
type originCounts struct {
	Requests map[string]float64 `json:"requests"`
	Bytes    map[string]float64 `json:"bytes"`
}

func (c originCounts) media() (req, bytes float64) {
	for _, k := range mediaKinds {
		req += c.Requests[k]
		bytes += c.Bytes[k]
	}
	return req, bytes
}

// sub is c − before, kind by kind.
func (c originCounts) sub(before originCounts) originCounts {
	out := originCounts{Requests: map[string]float64{}, Bytes: map[string]float64{}}
	for k, v := range c.Requests {
		out.Requests[k] = v - before.Requests[k]
	}
	for k, v := range c.Bytes {
		out.Bytes[k] = v - before.Bytes[k]
	}
	return out
}

// parseMetrics reads streambed_http_requests_total and
// streambed_http_response_bytes_total from the Prometheus text format.
func parseMetrics(r io.Reader) (originCounts, error) {
	c := originCounts{Requests: map[string]float64{}, Bytes: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "streambed_http_requests_total{"):
			into = c.Requests
		case strings.HasPrefix(line, "streambed_http_response_bytes_total{"):
			into = c.Bytes
		default:
			continue
		}
		labels, value, ok := strings.Cut(line[strings.IndexByte(line, '{')+1:], "} ")
		if !ok {
			return c, fmt.Errorf("metrics: bad line %q", line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return c, fmt.Errorf("metrics: bad value in %q", line)
		}
		into[label(labels, "kind")] += v
		seen = true
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if !seen {
		return c, fmt.Errorf("metrics: no streambed_http_requests_total: not a Streambed origin?")
	}
	return c, nil
}

// label is the value of name in a Prometheus label list (kind="segment",status="200").
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// cacheLog is what an nginx access log (internal/cdn's "cdn" format) says about the
// requests it answered: counts by cache status, and the upstream fetches per object
// (a request whose answer came from upstream: MISS, EXPIRED, BYPASS, or a
// revalidation).
type cacheLog struct {
	Requests int            `json:"requests"`
	ByStatus map[string]int `json:"by_cache_status"`
	// Upstream fetches of segments, per URL: each object should be fetched once.
	SegmentFetches       int `json:"segment_upstream_fetches"`
	SegmentObjects       int `json:"segment_objects"`
	MaxFetchesPerSegment int `json:"max_upstream_fetches_per_segment"`
	ManifestFetches      int `json:"manifest_upstream_fetches"`
}

// parseCacheLog reads the access log's lines:
//
//	TIME ADDR "GET /live/ch/v1080/12.m4s HTTP/1.1" 200 BYTES RT cache=MISS upstream=A:P upstream_status=200 upstream_time=T
//
// nginx does not log its background cache updates (subrequests), so manifest
// fetches counted here are a lower bound; the origin's /metrics counts them all.
func parseCacheLog(r io.Reader) (cacheLog, error) {
	l := cacheLog{ByStatus: map[string]int{}}
	perObject := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		q1 := strings.IndexByte(line, '"')
		q2 := strings.LastIndexByte(line, '"')
		if q1 < 0 || q2 <= q1 {
			continue // not a request line (a partial last line)
		}
		req := strings.Fields(line[q1+1 : q2])
		if len(req) < 2 {
			continue
		}
		path := req[1]
		var status, upstream string
		for _, f := range strings.Fields(line[q2+1:]) {
			if v, ok := strings.CutPrefix(f, "cache="); ok {
				status = v
			}
			if v, ok := strings.CutPrefix(f, "upstream="); ok {
				upstream = v
			}
		}
		l.Requests++
		if status == "" {
			status = "-"
		}
		l.ByStatus[status]++
		if upstream == "-" || upstream == "" {
			continue
		}
		switch {
		case strings.HasSuffix(path, ".m4s"):
			perObject[path]++
			l.SegmentFetches++
		case strings.HasSuffix(path, ".mpd") || strings.HasSuffix(path, ".m3u8"):
			l.ManifestFetches++
		}
	}
	l.SegmentObjects = len(perObject)
	for _, n := range perObject {
		l.MaxFetchesPerSegment = max(l.MaxFetchesPerSegment, n)
	}
	return l, sc.Err()
}
