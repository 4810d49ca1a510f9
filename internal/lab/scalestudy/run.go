package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/streambed/streambed/internal/cdn"
	"github.com/streambed/streambed/internal/lab/load/workload"
	"github.com/streambed/streambed/internal/lab/netem"
)

// lab is the emulated network and what every cell shares.
type lab struct {
	nw       *netem.Network
	o        options
	progress io.Writer
}

// running is a started process of a cell.
type running struct {
	Proc
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
}

// withCPUs pins argv to cpus with taskset ("" leaves it unpinned).
func withCPUs(cpus string, argv []string) []string {
	if cpus == "" {
		return argv
	}
	return append([]string{"taskset", "-c", cpus}, argv...)
}

// start runs p in its host; its output goes to a log file in dir.
func (l *lab) start(p Proc, dir string) (*running, error) {
	cpus := l.o.clientCPUs
	if p.Server {
		cpus = l.o.serverCPUs
	}
	argv := p.Argv
	if p.Cache != nil {
		prep, err := cdn.Write(*p.Cache)
		if err != nil {
			return nil, err
		}
		if prep.Binary == "" {
			_, err := cdn.Binary(p.Cache.Kind)
			return nil, err
		}
		argv = append([]string{prep.Binary}, prep.Args...)
	}
	cmd := l.nw.Command(p.Host, withCPUs(cpus, argv)...)
	logf, err := os.Create(filepath.Join(dir, string(p.Role)+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: %w", p.Role, err)
	}
	r := &running{Proc: p, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(r.exited) }()
	return r, nil
}

// stop ends r: SIGTERM (servers shut down gracefully, nginx flushes its log), then
// SIGKILL to its process group after 10 s.
func (r *running) stop() {
	if r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
}

// httpIn is an HTTP client whose connections are opened inside host.
func (l *lab) httpIn(host string) *http.Client {
	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = l.nw.Do(host, func() error {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// waitReady polls the MPD until it describes the channel (the encoder's segments
// have reached every tier), up to limit.
func (l *lab) waitReady(ctx context.Context, host, url string, limit time.Duration, exited <-chan string) error {
	hc := l.httpIn(host)
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) {
		select {
		case role := <-exited:
			return fmt.Errorf("%s exited while the channel was starting (see its log)", role)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), "<AdaptationSet") {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not list the channel within %v (last: %s)", url, limit, last)
}

// waitUp waits until an origin answers on its /metrics.
func (l *lab) waitUp(ctx context.Context, o Proc, limit time.Duration, exited <-chan string) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case role := <-exited:
			return fmt.Errorf("%s exited while starting (see its log)", role)
		default:
		}
		_, err := l.scrape(ctx, o)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %v: %w", o.Role, limit, err)
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// scrape reads an origin's request counters.
func (l *lab) scrape(ctx context.Context, p Proc) (originCounts, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Metrics+"/metrics", nil)
	resp, err := l.httpIn(p.Host).Do(req)
	if err != nil {
		return originCounts{}, fmt.Errorf("%s /metrics: %w", p.Role, err)
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// sampler keeps the servers' memory over the load window (max and mean of 1 s samples).
type sampler struct {
	mu   sync.Mutex
	max  map[Role]int64
	sum  map[Role]int64
	n    map[Role]int
	stop chan struct{}
	wg   sync.WaitGroup
}

func sampleMemory(servers []*running) *sampler {
	s := &sampler{max: map[Role]int64{}, sum: map[Role]int64{}, n: map[Role]int{}, stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			for _, r := range servers {
				if u, err := procTree(r.cmd.Process.Pid); err == nil {
					s.mu.Lock()
					s.max[r.Role] = max(s.max[r.Role], u.RSS)
					s.sum[r.Role] += u.RSS
					s.n[r.Role]++
					s.mu.Unlock()
				}
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) finish() { close(s.stop); s.wg.Wait() }

func (s *sampler) of(r Role) (maxMiB, meanMiB float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[r] == 0 {
		return 0, 0
	}
	return float64(s.max[r]) / (1 << 20), float64(s.sum[r]) / float64(s.n[r]) / (1 << 20)
}

// runCell runs one cell: servers and encoder up, channel servable at the viewers'
// tier, warm-up (its last part measures the ingest-only CPU), then the load with
// every server's CPU, memory and request counters read around it.
func (l *lab) runCell(ctx context.Context, c Cell, dir string) (res *CellResult, err error) {
	addr := map[string]netip.Addr{}
	for _, h := range l.nw.Hosts() {
		addr[h] = l.nw.Addr(h)
	}
	ld := Load{Workers: l.o.workers, Ramp: l.o.ramp, Duration: l.o.duration, Video: l.o.video, Audio: l.o.audio, ManifestEvery: l.o.manifestEvery}
	p, err := plan(c, addr, l.o.bin, dir, ld)
	if err != nil {
		return nil, err
	}
	exited := make(chan string, len(p.Procs))
	var procs []*running
	defer func() {
		// Caches first, then origins, then the encoder: nothing is asked of a
		// process that is gone.
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
	}()
	started := map[Role]*running{}
	for stage := 0; stage <= 2; stage++ {
		for _, q := range p.Procs {
			if q.Role == RoleLoad || q.Stage != stage {
				continue
			}
			r, err := l.start(q, dir)
			if err != nil {
				return nil, err
			}
			procs = append(procs, r)
			started[q.Role] = r
			go func() { <-r.exited; exited <- string(r.Role) }() // buffered: never blocks
		}
		switch stage {
		case 0:
			o, _ := p.proc(RoleOrigin)
			if err := l.waitUp(ctx, o, 30*time.Second, exited); err != nil {
				return nil, err
			}
		case 1:
			fmt.Fprintf(l.progress, "  waiting for the encoder's first segments at the origin…\n")
			if err := l.waitReady(ctx, p.OriginHost, p.OriginURL, 90*time.Second, exited); err != nil {
				return nil, err
			}
		}
	}
	fmt.Fprintf(l.progress, "  waiting for the channel at the viewers' tier…\n")
	if err := l.waitReady(ctx, p.ReadyHost, p.ReadyURL, 60*time.Second, exited); err != nil {
		return nil, err
	}
	warm := l.o.warmup
	if s := c.UseCase.Shift; s > 0 && s+5*time.Second > warm {
		warm = s + 5*time.Second // time-shifted viewers need that much of the channel
	}
	servers := []*running{}
	for _, r := range procs {
		if r.Server {
			servers = append(servers, r)
		}
	}
	idleFrom := time.Now().Add(warm / 2) // the first half settles, the second is measured
	if !sleepCtx(ctx, warm/2) {
		return nil, ctx.Err()
	}
	idle0 := usages(servers)
	if !sleepCtx(ctx, time.Until(idleFrom.Add(warm/2))) {
		return nil, ctx.Err()
	}
	idleS := time.Since(idleFrom).Seconds()
	idle1 := usages(servers)
	before := map[Role]originCounts{}
	for _, r := range procs {
		if r.Metrics != "" {
			if before[r.Role], err = l.scrape(ctx, r.Proc); err != nil {
				return nil, err
			}
		}
	}
	fmt.Fprintf(l.progress, "  load: 0 → %d workers over %v, %v in all\n", ld.Workers, ld.Ramp, ld.Duration)
	u0 := usages(servers)
	links0 := l.nw.Stats()
	mem := sampleMemory(servers)
	t0 := time.Now()
	lp, _ := p.proc(RoleLoad)
	if err := l.runLoad(ctx, lp); err != nil {
		mem.finish()
		return nil, err
	}
	loadS := time.Since(t0).Seconds()
	links1 := l.nw.Stats()
	avg := loadAvg()
	mem.finish()
	u1 := usages(servers)
	res = &CellResult{Config: int(c.Config), ConfigName: c.ConfigName(), Cache: string(c.cache()), UseCase: c.UseCase.Name, Rep: c.Rep,
		Workers: ld.Workers, RampS: ld.Ramp.Seconds(), DurationS: ld.Duration.Seconds(), MeasuredS: loadS,
		Servers: map[Role]*ServerResult{}, LoadAvg: avg, Links: linkDeltas(links0, links1, loadS)}
	for _, r := range servers {
		sr := &ServerResult{
			CPUCores:       (u1[r.Role].CPU - u0[r.Role].CPU) / loadS,
			IngestCPUCores: (idle1[r.Role].CPU - idle0[r.Role].CPU) / idleS,
		}
		sr.RSSMaxMiB, sr.RSSMeanMiB = mem.of(r.Role)
		if r.Metrics != "" {
			after, err := l.scrape(ctx, r.Proc)
			if err != nil {
				return nil, err
			}
			d := after.sub(before[r.Role])
			sr.Requests = d.Requests
			sr.MediaRequests, sr.MediaBytes = d.media()
		}
		res.Servers[r.Role] = sr
	}
	// The cache's log is complete once nginx has stopped (it flushes on exit).
	// Varnish keeps its log in shared memory: no per-object count for it here.
	if cr := started[RoleCache]; cr != nil && cr.Cache.Kind == cdn.Nginx {
		cr.stop()
		f, err := os.Open(filepath.Join(cr.Cache.Dir, "access.log"))
		if err != nil {
			return nil, err
		}
		cl, err := parseCacheLog(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		res.CacheLog = &cl
	}
	rep, err := workload.Load(filepath.Join(dir, "load", "report.json"))
	if err != nil {
		return nil, fmt.Errorf("load report: %w", err)
	}
	res.fromLoad(rep)
	res.reductions()
	return res, nil
}

// runLoad runs the load generator in the client host, its progress lines indented
// on the terminal.
func (l *lab) runLoad(ctx context.Context, p Proc) error {
	cmd := l.nw.CommandContext(ctx, p.Host, withCPUs(l.o.clientCPUs, p.Argv)...)
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	var tail strings.Builder
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fmt.Fprintf(l.progress, "    %s\n", line)
		tail.WriteString(line + "\n")
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("load generator: %w\n%s", err, tail.String())
	}
	return nil
}

func usages(rs []*running) map[Role]usage {
	m := map[Role]usage{}
	for _, r := range rs {
		u, _ := procTree(r.cmd.Process.Pid)
		m[r.Role] = u
	}
	return m
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
