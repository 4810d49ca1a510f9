package netem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// Backend moves packets between hosts.
type Backend string

// Backends.
const (
	// BackendAuto picks kernel when the kernel has netem and the profiles need
	// nothing only user space does (rate traces), else userspace.
	BackendAuto Backend = ""
	// BackendUserspace forwards packets through TUN devices in this process.
	BackendUserspace Backend = "userspace"
	// BackendKernel uses veth pairs shaped by tc netem and tbf.
	BackendKernel Backend = "kernel"
)

// ParseBackend reads "auto", "userspace" or "kernel".
func ParseBackend(s string) (Backend, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return BackendAuto, nil
	case "userspace", "user", "tun":
		return BackendUserspace, nil
	case "kernel", "tc", "netem":
		return BackendKernel, nil
	}
	return "", fmt.Errorf("backend %q: want auto, userspace or kernel", s)
}

// Options tune Up. The zero value is ready to use.
type Options struct {
	Backend Backend
	// Seed makes the random impairments repeatable; 0 picks a random seed.
	Seed uint64
	// StateDir holds run records for crash cleanup (default /run/streambed-netem).
	StateDir string
	// Name labels the run in its record (the CLI's network name).
	Name string
	// MTU of the links (default 1500).
	MTU    int
	Logger *slog.Logger
}

// Network is an emulated network that is up. Its methods are safe for concurrent use.
type Network struct {
	id       string
	topo     Topology
	backend  Backend
	reason   string
	netem    bool // the kernel has the netem qdisc
	opts     Options
	log      *slog.Logger
	clk      clock
	hosts    map[string]*host
	links    []*link
	pool     *bufPool
	wg       sync.WaitGroup
	files    []*os.File
	closeMu  sync.Mutex
	closed   bool
	done     chan struct{}
	closeErr error
}

type host struct {
	name, ns string
	addr     netip.Addr
}

type link struct {
	a, b     string
	ifA, ifB string // interface in a toward b, in b toward a
	mu       sync.Mutex
	profile  Profile
	fwd, rev *pipe      // user space
	kf, kr   *kernelDir // kernel
}

// Up builds the topology: one namespace per host, one emulated link per link spec,
// routes for hosts without a direct link. The network lives until Close or until
// ctx is done. Up first removes what crashed earlier runs left (see CleanStale).
func Up(ctx context.Context, topo Topology, opts Options) (_ *Network, err error) {
	if err := ensureRoot(); err != nil {
		return nil, err
	}
	t, err := topo.normalize()
	if err != nil {
		return nil, err
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.MTU == 0 {
		opts.MTU = 1500
	}
	if opts.Seed == 0 {
		opts.Seed = uint64(time.Now().UnixNano())
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := CleanStale(opts.StateDir, log); err != nil {
		log.Warn("stale netem cleanup incomplete", "err", err)
	}
	n := &Network{
		id: newRunID(), topo: t, opts: opts, log: log, clk: newClock(),
		hosts: map[string]*host{}, done: make(chan struct{}),
	}
	rec := runRecord{ID: n.id, PID: os.Getpid(), PIDStart: procStart(os.Getpid()), Name: opts.Name, Created: time.Now()}
	for _, h := range t.Hosts {
		hh := &host{name: h.Name, ns: namespaceName(n.id, h.Name), addr: h.Addr}
		n.hosts[h.Name] = hh
		rec.Namespaces = append(rec.Namespaces, hh.ns)
	}
	probeNS := namespaceName(n.id, "probe")
	rec.Namespaces = append(rec.Namespaces, probeNS)
	if err := writeRecord(opts.StateDir, rec); err != nil {
		return nil, fmt.Errorf("netem: run record: %w", err)
	}
	defer func() {
		if err != nil {
			_ = n.Close()
		}
	}()
	if n.backend, n.reason, n.netem, err = chooseBackend(ctx, opts.Backend, t, probeNS); err != nil {
		return nil, err
	}
	log.Info("netem backend", "backend", n.backend, "why", n.reason)
	for _, h := range t.Hosts {
		if err := createNamespace(ctx, n.hosts[h.Name].ns); err != nil {
			return nil, err
		}
	}
	n.pool = newBufPool(opts.MTU + 64)
	for i, ls := range t.Links {
		l := &link{a: ls.A, b: ls.B, profile: ls.Profile}
		l.ifA = ifName(t, ls.A, ls.B)
		l.ifB = ifName(t, ls.B, ls.A)
		n.links = append(n.links, l)
		if err := n.addLink(ctx, l, uint64(i)); err != nil {
			return nil, fmt.Errorf("link %s–%s: %w", ls.A, ls.B, err)
		}
	}
	if err := n.addRoutes(ctx); err != nil {
		return nil, err
	}
	for _, l := range n.links {
		if l.fwd != nil {
			l.fwd.start(&n.wg)
			l.rev.start(&n.wg)
		}
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = n.Close()
		case <-n.done:
		}
	}()
	return n, nil
}

func chooseBackend(ctx context.Context, want Backend, t Topology, probeNS string) (b Backend, why string, hasNetem bool, err error) {
	needsUser := ""
	for _, l := range t.Links {
		if l.Profile.Forward.Rate.Trace != nil || l.Profile.Reverse.Rate.Trace != nil {
			needsUser = "a rate trace"
		}
	}
	switch want {
	case BackendUserspace:
		return BackendUserspace, "forced", false, nil
	case BackendKernel:
		if needsUser != "" {
			return "", "", false, fmt.Errorf("netem: the kernel backend cannot play %s; use the user-space backend", needsUser)
		}
		ok, err := probeNetem(ctx, probeNS)
		if err != nil {
			return "", "", false, err
		}
		if !ok {
			return BackendKernel, "forced; kernel has no netem qdisc, so only rate (tbf) and random loss (iptables)", false, nil
		}
		return BackendKernel, "forced", true, nil
	case BackendAuto:
	default:
		return "", "", false, fmt.Errorf("netem: unknown backend %q", want)
	}
	ok, err := probeNetem(ctx, probeNS)
	switch {
	case err != nil:
		return BackendUserspace, "netem probe failed: " + err.Error(), false, nil
	case !ok:
		return BackendUserspace, "kernel has no netem qdisc", false, nil
	case needsUser != "":
		return BackendUserspace, "profile uses " + needsUser, true, nil
	}
	return BackendKernel, "kernel has netem", true, nil
}

// ifName names the interface in host `in` that leads to host `to`: "sb-" and the
// peer's name, cut to the kernel's 15 characters (an index if that is ambiguous).
func ifName(t Topology, in, to string) string {
	name := "sb-" + to
	if len(name) <= 15 {
		return name
	}
	for i, h := range t.Hosts {
		if h.Name == to {
			return fmt.Sprintf("sb-%.8s-%d", to, i)
		}
	}
	return name[:15]
}

func (n *Network) addLink(ctx context.Context, l *link, idx uint64) error {
	ha, hb := n.hosts[l.a], n.hosts[l.b]
	switch n.backend {
	case BackendUserspace:
		var fa, fb *os.File
		if err := inNamespace(ha.ns, func() (err error) { fa, err = openTUN(l.ifA); return err }); err != nil {
			return err
		}
		n.files = append(n.files, fa)
		if err := inNamespace(hb.ns, func() (err error) { fb, err = openTUN(l.ifB); return err }); err != nil {
			return err
		}
		n.files = append(n.files, fb)
		seed := n.opts.Seed + 2*idx*0x9e3779b9
		now := n.clk.now()
		var err error
		if l.fwd, err = newPipe(fa, fb, n.clk, n.pool, newShaper(l.profile.Forward, seed, now)); err != nil {
			return err
		}
		n.files = append(n.files, l.fwd.timer.f)
		if l.rev, err = newPipe(fb, fa, n.clk, n.pool, newShaper(l.profile.Reverse, seed+1, now)); err != nil {
			return err
		}
		n.files = append(n.files, l.rev.timer.f)
	case BackendKernel:
		if err := ip(ctx, "-n", ha.ns, "link", "add", l.ifA, "type", "veth", "peer", "name", l.ifB, "netns", hb.ns); err != nil {
			return err
		}
	}
	mtu := fmt.Sprint(n.opts.MTU)
	for _, e := range []struct {
		h     *host
		dev   string
		local netip.Addr
		peer  netip.Addr
	}{{ha, l.ifA, ha.addr, hb.addr}, {hb, l.ifB, hb.addr, ha.addr}} {
		if err := ip(ctx, "-n", e.h.ns, "link", "set", "dev", e.dev, "mtu", mtu, "txqueuelen", "1000", "up"); err != nil {
			return err
		}
		if n.backend == BackendKernel {
			// One segment per packet, as on a wire: tbf and netem then see and
			// count real packets, not 64 KiB GSO bursts that overflow their queue.
			if err := ip(ctx, "-n", e.h.ns, "link", "set", "dev", e.dev, "gso_max_segs", "1"); err != nil {
				return err
			}
		}
		if err := ip(ctx, "-n", e.h.ns, "addr", "add", e.local.String()+"/32", "peer", e.peer.String()+"/32", "dev", e.dev); err != nil {
			return err
		}
	}
	if n.backend == BackendKernel {
		l.kf = &kernelDir{ns: ha.ns, dev: l.ifA, peerNS: hb.ns, peerDev: l.ifB, netem: n.netem}
		l.kr = &kernelDir{ns: hb.ns, dev: l.ifB, peerNS: ha.ns, peerDev: l.ifA, netem: n.netem}
		if err := l.kf.apply(ctx, l.profile.Forward); err != nil {
			return err
		}
		if err := l.kr.apply(ctx, l.profile.Reverse); err != nil {
			return err
		}
	}
	return nil
}

func (n *Network) addRoutes(ctx context.Context) error {
	for src, r := range n.topo.routes() {
		for dst, hop := range r {
			h := n.hosts[src]
			dev := ifName(n.topo, src, hop)
			if err := ip(ctx, "-n", h.ns, "route", "add", n.hosts[dst].addr.String()+"/32",
				"via", n.hosts[hop].addr.String(), "dev", dev); err != nil {
				return err
			}
		}
	}
	return nil
}

// ID is the run id in the namespace names ("sbn-<id>-<host>").
func (n *Network) ID() string { return n.id }

// Backend says which backend moves the packets, and Why says why it was chosen.
func (n *Network) Backend() Backend { return n.backend }

// Why explains the backend choice ("kernel has no netem qdisc", "forced", ...).
func (n *Network) Why() string { return n.reason }

// Hosts lists the host names in topology order.
func (n *Network) Hosts() []string {
	var s []string
	for _, h := range n.topo.Hosts {
		s = append(s, h.Name)
	}
	return s
}

// Addr is a host's address (invalid if there is no such host).
func (n *Network) Addr(host string) netip.Addr {
	if h, ok := n.hosts[host]; ok {
		return h.addr
	}
	return netip.Addr{}
}

// Server is the address of the topology's server host (STREAMBED_SERVER).
func (n *Network) Server() netip.Addr { return n.Addr(n.topo.Server) }

// Namespace is the name of a host's network namespace (for `ip netns exec`).
func (n *Network) Namespace(host string) string {
	if h, ok := n.hosts[host]; ok {
		return h.ns
	}
	return ""
}

// Env is the environment a command in host sees on top of this process's:
// STREAMBED_SERVER (the server's address), STREAMBED_HOST (the host's name) and
// STREAMBED_ADDR_<HOST> for every host (upper case, dashes as underscores).
func (n *Network) Env(host string) []string {
	return hostEnv(host, n.Server(), n.addrs())
}

func (n *Network) addrs() map[string]netip.Addr {
	m := map[string]netip.Addr{}
	for name, h := range n.hosts {
		m[name] = h.addr
	}
	return m
}

func hostEnv(host string, server netip.Addr, addrs map[string]netip.Addr) []string {
	env := []string{"STREAMBED_SERVER=" + server.String(), "STREAMBED_HOST=" + host}
	names := make([]string, 0, len(addrs))
	for name := range addrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		env = append(env, "STREAMBED_ADDR_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"="+addrs[name].String())
	}
	return env
}

// Command returns a command that runs argv inside host, with the environment of
// Env. Start it like any exec.Cmd; processes still running in a host are stopped by
// Close.
func (n *Network) Command(host string, argv ...string) *exec.Cmd {
	return n.CommandContext(context.Background(), host, argv...)
}

// CommandContext is Command with a context that kills the command.
func (n *Network) CommandContext(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return nsCommand(ctx, n.Namespace(host), append(os.Environ(), n.Env(host)...), argv)
}

func nsCommand(ctx context.Context, ns string, env, argv []string) *exec.Cmd {
	if ns == "" {
		ns = "sbn-no-such-host"
	}
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Env = env
	return cmd
}

// Do runs fn on an OS thread inside host's namespace: sockets fn opens (net.Listen,
// net.Dial, ...) belong to that host and keep working after fn returns.
func (n *Network) Do(host string, fn func() error) error {
	h, ok := n.hosts[host]
	if !ok {
		return fmt.Errorf("netem: no host %q", host)
	}
	return inNamespace(h.ns, fn)
}

// SetLink changes the profile of the link between a and b while traffic flows
// (Forward applies from a to b). Packets already queued or in flight keep their
// timing; rate schedules restart from now.
func (n *Network) SetLink(a, b string, p Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	l, rev := n.findLink(a, b)
	if l == nil {
		return fmt.Errorf("netem: no link between %s and %s", a, b)
	}
	if rev {
		p = p.Reversed()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.fwd != nil:
		l.fwd.set(p.Forward)
		l.rev.set(p.Reverse)
	case l.kf != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := l.kf.apply(ctx, p.Forward); err != nil {
			return err
		}
		if err := l.kr.apply(ctx, p.Reverse); err != nil {
			return err
		}
	}
	l.profile = p
	return nil
}

// Link returns the profile of the link between a and b, Forward from a to b.
func (n *Network) Link(a, b string) (Profile, bool) {
	l, rev := n.findLink(a, b)
	if l == nil {
		return Profile{}, false
	}
	l.mu.Lock()
	p := l.profile
	l.mu.Unlock()
	if rev {
		p = p.Reversed()
	}
	return p, true
}

// Links lists the links as host pairs in topology order.
func (n *Network) Links() [][2]string {
	var out [][2]string
	for _, l := range n.links {
		out = append(out, [2]string{l.a, l.b})
	}
	return out
}

func (n *Network) findLink(a, b string) (*link, bool) {
	for _, l := range n.links {
		if l.a == a && l.b == b {
			return l, false
		}
		if l.a == b && l.b == a {
			return l, true
		}
	}
	return nil, false
}

// Drops is each user-space link direction's undelivered packets ("a>b") at or after
// epoch ms since; empty for the kernel backend.
func (n *Network) Drops(since int64) map[string][]Drop {
	out := map[string][]Drop{}
	for _, l := range n.links {
		if l.fwd == nil {
			continue
		}
		out[l.a+">"+l.b] = l.fwd.drops.since(since)
		out[l.b+">"+l.a] = l.rev.drops.since(since)
	}
	return out
}

// Stats reports what each direction of each link did (user-space backend only; the
// kernel backend returns nil).
func (n *Network) Stats() []DirectionStats {
	var out []DirectionStats
	for _, l := range n.links {
		if l.fwd == nil {
			continue
		}
		f, r := l.fwd.stats(), l.rev.stats()
		f.From, f.To = l.a, l.b
		r.From, r.To = l.b, l.a
		out = append(out, f, r)
	}
	return out
}

// Done is closed when the network has been closed.
func (n *Network) Done() <-chan struct{} { return n.done }

// Close stops the forwarder, stops processes left in the hosts and removes the
// namespaces. It is safe to call more than once.
func (n *Network) Close() error {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.closed {
		return n.closeErr
	}
	n.closed = true
	defer close(n.done)
	var errs []error
	for _, l := range n.links {
		if l.kf != nil {
			l.kf.close()
			l.kr.close()
		}
	}
	for _, f := range n.files {
		_ = f.Close()
	}
	n.wg.Wait()
	for _, h := range n.hosts {
		if err := deleteNamespace(h.ns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := deleteNamespace(namespaceName(n.id, "probe")); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		removeRecord(n.opts.StateDir, n.id)
	}
	n.closeErr = errors.Join(errs...)
	return n.closeErr
}
