package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
)

// Netem builds emulated networks of namespaces: up, exec, down, run, status, set.
// `exec` and `run` exit with the command's exit status: a status other than 0 comes
// back as an *ExitError (everything is cleaned up by then).
func Netem(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	code, err := netemMain(ctx, args, stdout, stderr)
	if err == nil && code != 0 {
		return &ExitError{Code: code}
	}
	return err
}

const netemUsage = `Usage: streambed netem COMMAND [flags]

Builds hosts as Linux network namespaces and joins them with emulated links
(rate, delay, jitter, loss, duplication, corruption, reordering, queue limit).
Needs root. Default topology: hosts "client" and "server" on one link.

Commands:
  up      bring a network up and leave it running (prints the server's address)
  exec    run a command inside a host:        streambed netem exec client -- curl http://$STREAMBED_SERVER:8080/
  down    remove the network (and whatever crashed runs left behind)
  run     up + exec in client + down:         streambed netem run --delay 25ms -- iperf3 -c ...
  status  show hosts, links, profiles and packet counters
  set     change a link's profile while it runs: streambed netem set --rate 1mbit

Run 'streambed netem COMMAND --help' for a command's flags.
Commands inside hosts find the server's address in $STREAMBED_SERVER.
`

func netemMain(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, netemUsage)
		return 0, errors.New("missing command (up, exec, down, run, status, set)")
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, netemUsage)
		return 0, flag.ErrHelp
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "up":
		return 0, netemUp(ctx, rest, stdout, stderr)
	case "forward":
		return 0, netemForward(ctx, rest, stdout, stderr)
	case "exec":
		return netemExec(ctx, rest, stdout, stderr)
	case "down":
		return 0, netemDown(rest, stdout, stderr)
	case "run":
		return netemRun(ctx, rest, stdout, stderr)
	case "status":
		return 0, netemStatus(ctx, rest, stdout, stderr)
	case "set":
		return 0, netemSet(ctx, rest, stdout, stderr)
	}
	return 0, fmt.Errorf("unknown command %q (up, exec, down, run, status, set)", cmd)
}

func isHelp(s string) bool { return s == "-h" || s == "--help" || s == "-help" || s == "help" }

// linkFlags are the flags that describe a link; up, run and set share them.
type linkFlags struct {
	fs       *flag.FlagSet
	profile  string
	topology string
	backend  string
	seed     uint64
	name     string
	stateDir string
}

func newLinkFlags(name, usage string, stderr io.Writer, withTopology bool) *linkFlags {
	lf := &linkFlags{fs: flag.NewFlagSet("streambed netem "+name, flag.ContinueOnError)}
	fs := lf.fs
	fs.SetOutput(stderr)
	fs.Usage = func() { printUsage(fs.Output(), usage, fs) }
	fs.String("delay", "", "one-way delay, applied in each direction (RTT = 2·delay), e.g. 25ms")
	fs.String("jitter", "", "delay variation, ± (uniform), e.g. 5ms")
	fs.Bool("jitter-reorders", false, "let jitter reorder packets (as netem does); default keeps order")
	fs.String("loss", "", "random loss in percent, each direction, e.g. 1 or 0.2%")
	fs.String("rate", "", "rate limit in each direction, e.g. 2mbit, 10Mbit/s, 500kbit")
	fs.String("duplicate", "", "share of packets sent twice, in percent")
	fs.String("corrupt", "", "share of packets with one bit flipped, in percent")
	fs.String("reorder", "", "share of packets sent without the delay (overtaking), in percent")
	fs.String("queue", "", "drop-tail queue before the rate: packets (100p), bytes (64kb) or latency (50ms)")
	fs.String("burst", "", "token-bucket depth for the rate, e.g. 32kb (default: none, pure serialisation)")
	fs.StringVar(&lf.profile, "profile", "", "profile file (YAML); flags override it")
	if withTopology {
		fs.StringVar(&lf.topology, "topology", "", "topology file (YAML) with more hosts and links; flags then apply to every link")
		fs.StringVar(&lf.backend, "backend", "auto", "auto, userspace (TUN forwarder) or kernel (tc netem/tbf)")
		fs.Uint64Var(&lf.seed, "seed", 0, "seed for the random impairments (0: random)")
	}
	fs.StringVar(&lf.name, "name", "default", "name of the network, to keep several up at once")
	fs.StringVar(&lf.stateDir, "state-dir", netem.DefaultStateDir, "where run records and network state live")
	return lf
}

func printUsage(w io.Writer, usage string, fs *flag.FlagSet) {
	fmt.Fprint(w, usage)
	fmt.Fprintln(w, "\nFlags:")
	fs.VisitAll(func(f *flag.Flag) {
		arg, help := flag.UnquoteUsage(f)
		if arg != "" {
			arg = flagArg(f.Name)
		}
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			help += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "%-26s %s\n", line, help)
	})
}

// flagArg names the value a flag takes, for help.
func flagArg(name string) string {
	switch name {
	case "delay", "jitter":
		return "TIME"
	case "loss", "duplicate", "corrupt", "reorder":
		return "PERCENT"
	case "profile", "topology":
		return "FILE"
	case "state-dir":
		return "DIR"
	case "link":
		return "A,B"
	case "seed":
		return "N"
	case "rate", "queue", "burst", "backend", "name":
		return map[string]string{"rate": "RATE", "queue": "LIMIT", "burst": "SIZE", "backend": "BACKEND", "name": "NAME"}[name]
	}
	return "VALUE"
}

// parse parses args, printing help on stdout when asked.
func (lf *linkFlags) parse(args []string, stdout io.Writer) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelp(a) && a != "help" {
			lf.fs.SetOutput(stdout)
			lf.fs.Usage()
			return flag.ErrHelp
		}
	}
	return lf.fs.Parse(args)
}

// overrides applies the link flags that were given to m.
func (lf *linkFlags) overrides(m *netem.Impairment) error {
	var err error
	lf.fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		v := f.Value.String()
		switch f.Name {
		case "delay":
			var d time.Duration
			d, err = netem.ParseDuration(v)
			m.Delay = netem.Duration(d)
		case "jitter":
			var d time.Duration
			d, err = netem.ParseDuration(v)
			m.Jitter = netem.Duration(d)
		case "jitter-reorders":
			m.JitterReorders, err = strconv.ParseBool(v)
		case "loss":
			var p netem.Percent
			p, err = netem.ParsePercent(v)
			m.Loss = netem.Bernoulli(p)
		case "rate":
			var r netem.Rate
			r, err = netem.ParseRate(v)
			m.Rate = netem.ConstantRate(r)
		case "duplicate":
			m.Duplicate, err = netem.ParsePercent(v)
		case "corrupt":
			m.Corrupt, err = netem.ParsePercent(v)
		case "reorder":
			m.Reorder, err = netem.ParsePercent(v)
		case "queue":
			m.Queue, err = netem.ParseQueue(v)
		case "burst":
			m.Burst, err = netem.ParseSize(v)
		default:
			return
		}
		if err != nil {
			err = fmt.Errorf("--%s: %w", f.Name, err)
		}
	})
	return err
}

func (lf *linkFlags) applyProfile(p *netem.Profile) error {
	if err := lf.overrides(&p.Forward); err != nil {
		return err
	}
	if err := lf.overrides(&p.Reverse); err != nil {
		return err
	}
	return p.Validate()
}

// topology builds the topology the flags describe.
func (lf *linkFlags) topologyFromFlags() (netem.Topology, error) {
	var base netem.Profile
	if lf.profile != "" {
		p, err := netem.LoadProfile(lf.profile)
		if err != nil {
			return netem.Topology{}, err
		}
		base = p
	}
	if lf.topology == "" {
		if err := lf.applyProfile(&base); err != nil {
			return netem.Topology{}, err
		}
		return netem.TwoHosts(base), nil
	}
	t, err := netem.LoadTopology(lf.topology)
	if err != nil {
		return t, err
	}
	for i := range t.Links {
		if lf.profile != "" {
			t.Links[i].Profile = base
		}
		if err := lf.applyProfile(&t.Links[i].Profile); err != nil {
			return t, err
		}
	}
	return t, nil
}

func (lf *linkFlags) options() (netem.Options, error) {
	b, err := netem.ParseBackend(lf.backend)
	if err != nil {
		return netem.Options{}, err
	}
	return netem.Options{Backend: b, Seed: lf.seed, StateDir: lf.stateDir, Name: lf.name}, nil
}

const upUsage = `Usage: streambed netem up [flags]

Brings up hosts "client" and "server" (or the hosts of --topology) joined by
emulated links, and leaves them running in a background process until
'streambed netem down'. Prints the server host's address on stdout; commands
run with 'streambed netem exec' find it in $STREAMBED_SERVER.

Examples:
  streambed netem up --delay 25ms --rate 10mbit          # RTT 50 ms, 10 Mbit/s each way
  streambed netem up --delay 50ms --jitter 10ms --loss 0.2%
  streambed netem up --profile experiments/profiles/fdsp-2-2.5mbit.yaml --delay 75ms
  streambed netem up --topology experiments/profiles/topology-origin-at-scale.yaml
  SERVER=$(streambed netem up --rate 4mbit) && streambed netem exec client -- ping -c3 $SERVER
`

func netemUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	lf := newLinkFlags("up", upUsage, stderr, true)
	if err := lf.parse(args, stdout); err != nil {
		return err
	}
	if lf.fs.NArg() > 0 {
		return fmt.Errorf("up takes no arguments (got %q); to run a command use 'streambed netem run -- CMD'", lf.fs.Args())
	}
	if _, err := lf.topologyFromFlags(); err != nil { // fail here, not in the daemon
		return err
	}
	if os.Geteuid() != 0 {
		return netem.ErrNotRoot
	}
	if st, err := netem.ReadState(lf.stateDir, lf.name); err == nil && st.Alive() {
		return fmt.Errorf("network %q is already up (daemon pid %d); run 'streambed netem down%s' first", lf.name, st.PID, nameFlag(lf.name))
	}
	if _, err := netem.CleanStale(lf.stateDir, nil); err != nil {
		fmt.Fprintln(stderr, "netem: stale cleanup:", err)
	}
	_ = os.Remove(netem.StatePath(lf.stateDir, lf.name))
	if err := os.MkdirAll(lf.stateDir, 0o755); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := netem.LogPath(lf.stateDir, lf.name)
	r, err := netem.StartDaemon(ctx, append([]string{exe, "netem", "forward"}, args...), logPath)
	if err != nil {
		return err
	}
	st := r.State
	fmt.Fprintf(stderr, "netem: network %q up (daemon pid %d, log %s)\n", st.Name, st.PID, logPath)
	fmt.Fprintf(stderr, "netem: backend %s (%s)\n", st.Backend, st.Why)
	for _, h := range st.Hosts {
		fmt.Fprintf(stderr, "netem: host %-8s %s  (namespace %s)\n", h.Name, h.Addr, h.Namespace)
	}
	for _, l := range r.Links {
		fmt.Fprintf(stderr, "netem: link %s → %s: %s\n", l.A, l.B, l.Profile.Forward)
		fmt.Fprintf(stderr, "netem: link %s → %s: %s\n", l.B, l.A, l.Profile.Reverse)
	}
	fmt.Fprintf(stderr, "netem: run commands with 'streambed netem exec%s HOST -- CMD'; STREAMBED_SERVER=%s\n", nameFlag(st.Name), st.Addr(st.Server))
	fmt.Fprintln(stdout, st.Addr(st.Server))
	return nil
}

func nameFlag(name string) string {
	if name == "default" {
		return ""
	}
	return " --name " + name
}

// netemForward is the daemon `up` starts: it owns the network until SIGTERM.
func netemForward(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	lf := newLinkFlags("forward", "Usage: streambed netem forward [up flags]   (started by 'up'; not for direct use)\n", stderr, true)
	if err := lf.parse(args, stdout); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := netem.RaisePriority(-10); err != nil { // steadier timing on a busy machine
		log.Warn("could not raise priority", "err", err)
	}
	topo, err := lf.topologyFromFlags()
	var opts netem.Options
	if err == nil {
		opts, err = lf.options()
	}
	if err != nil {
		netem.Announce(stdout, netem.Ready{Error: err.Error()})
		return err
	}
	opts.Logger = log
	return netem.RunDaemon(ctx, topo, opts, stdout)
}

const execUsage = `Usage: streambed netem exec [--name NAME] HOST -- CMD [ARGS...]

Runs CMD inside HOST of a network brought up with 'streambed netem up', with
$STREAMBED_SERVER set to the server's address (and $STREAMBED_HOST,
$STREAMBED_ADDR_<HOST> for every host). Exits with CMD's exit status.

Examples:
  streambed netem exec server -- iperf3 -s -D              # a server in the background
  streambed netem exec client -- sh -c 'iperf3 -c $STREAMBED_SERVER -t 5'
  streambed netem exec client -- ping -c 5 10.77.0.2
  streambed netem exec --name lab2 cache -- nginx -c /tmp/cache.conf

Quote $STREAMBED_SERVER as above so the shell inside the host expands it.
`

func netemExec(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("streambed netem exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printUsage(fs.Output(), execUsage, fs) }
	name := fs.String("name", "default", "name of the network")
	stateDir := fs.String("state-dir", netem.DefaultStateDir, "where network state lives")
	if err := parseHelp(fs, args, stdout); err != nil {
		return 0, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return 0, errors.New("exec needs a HOST and a command")
	}
	host, argv := rest[0], rest[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return 0, errors.New("exec needs a command after the host: exec HOST -- CMD")
	}
	st, err := netem.ReadState(*stateDir, *name)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("no network %q is up; start one with 'streambed netem up%s'", *name, nameFlag(*name))
	}
	if err != nil {
		return 0, err
	}
	if !st.Alive() {
		return 0, fmt.Errorf("network %q is gone (daemon pid %d died; see %s); run 'streambed netem down%s' to clean up", *name, st.PID, st.Log, nameFlag(*name))
	}
	cmd, err := st.CommandContext(ctx, host, argv...)
	if err != nil {
		return 0, err
	}
	return runForeground(cmd, stdout, stderr)
}

// runForeground runs cmd with our stdio and returns its exit status.
func runForeground(cmd *exec.Cmd, stdout, stderr io.Writer) (int, error) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}

func parseHelp(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	return fs.Parse(args)
}

const downUsage = `Usage: streambed netem down [--name NAME]

Stops the network's daemon, which removes its namespaces, links and any
processes still running in its hosts. Also removes what crashed runs left
behind (only runs whose owning process is dead). Safe to run twice.

Example:
  streambed netem down
`

func netemDown(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("streambed netem down", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printUsage(fs.Output(), downUsage, fs) }
	name := fs.String("name", "default", "name of the network")
	stateDir := fs.String("state-dir", netem.DefaultStateDir, "where network state lives")
	if err := parseHelp(fs, args, stdout); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return netem.ErrNotRoot
	}
	st, err := netem.ReadState(*stateDir, *name)
	switch {
	case err == nil && st.Alive():
		if err := st.Stop(15 * time.Second); err != nil {
			fmt.Fprintln(stderr, "netem:", err)
		}
		fmt.Fprintf(stderr, "netem: network %q is down\n", *name)
	case err == nil:
		fmt.Fprintf(stderr, "netem: network %q had died (pid %d); cleaning up\n", *name, st.PID)
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(stderr, "netem: no network %q is up\n", *name)
	default:
		fmt.Fprintln(stderr, "netem:", err)
	}
	_ = os.Remove(netem.StatePath(*stateDir, *name))
	removed, err := netem.CleanStale(*stateDir, nil)
	if len(removed) > 0 {
		fmt.Fprintf(stderr, "netem: removed %d namespaces of dead runs: %s\n", len(removed), strings.Join(removed, " "))
	}
	return err
}

const runUsage = `Usage: streambed netem run [up flags] -- CMD [ARGS...]

Brings a network up, runs CMD in the client host, and removes the network, also
on Ctrl-C. Exits with CMD's exit status. Start servers inside the command, or
use up/exec/down for several commands.

Examples:
  streambed netem run --delay 25ms -- sh -c 'ping -c 10 $STREAMBED_SERVER'
  streambed netem run --rate 4mbit --delay 20ms --loss 1% -- ./my-benchmark.sh
  streambed netem run --profile experiments/profiles/fdsp-4-6mbit.yaml -- sh -c 'echo $STREAMBED_SERVER'
`

func netemRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	lf := newLinkFlags("run", runUsage, stderr, true)
	if err := lf.parse(args, stdout); err != nil {
		return 0, err
	}
	argv := lf.fs.Args()
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		lf.fs.Usage()
		return 0, errors.New("run needs a command after --")
	}
	topo, err := lf.topologyFromFlags()
	if err != nil {
		return 0, err
	}
	opts, err := lf.options()
	if err != nil {
		return 0, err
	}
	n, err := netem.Up(ctx, topo, opts)
	if err != nil {
		return 0, err
	}
	defer n.Close()
	fmt.Fprintf(stderr, "netem: backend %s (%s); server %s\n", n.Backend(), n.Why(), n.Server())
	client := "client"
	if n.Namespace(client) == "" {
		client = n.Hosts()[0]
	}
	code, err := runForeground(n.CommandContext(ctx, client, argv...), stdout, stderr)
	if cerr := n.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return code, err
}

const statusUsage = `Usage: streambed netem status [--name NAME] [--json]

Shows the hosts, the links with their profiles, and each direction's packet
counters (user-space backend).
`

func netemStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("streambed netem status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printUsage(fs.Output(), statusUsage, fs) }
	name := fs.String("name", "default", "name of the network")
	stateDir := fs.String("state-dir", netem.DefaultStateDir, "where network state lives")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseHelp(fs, args, stdout); err != nil {
		return err
	}
	st, err := netem.ReadState(*stateDir, *name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no network %q is up", *name)
		}
		return err
	}
	rep, err := st.Ask(ctx, netem.Request{Op: "status"})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			State netem.State `json:"state"`
			netem.Reply
		}{st, rep})
	}
	fmt.Fprintf(stdout, "network %s (id %s, daemon pid %d), backend %s (%s)\n", st.Name, st.ID, st.PID, st.Backend, st.Why)
	for _, h := range st.Hosts {
		mark := ""
		if h.Name == st.Server {
			mark = "  ← STREAMBED_SERVER"
		}
		fmt.Fprintf(stdout, "  host %-8s %-12s %s%s\n", h.Name, h.Addr, h.Namespace, mark)
	}
	for _, l := range rep.Links {
		fmt.Fprintf(stdout, "  link %s → %s: %s\n", l.A, l.B, l.Profile.Forward)
		fmt.Fprintf(stdout, "  link %s → %s: %s\n", l.B, l.A, l.Profile.Reverse)
	}
	for _, s := range rep.Stats {
		fmt.Fprintf(stdout, "  %s → %s: %d packets in, %d delivered, %d lost, %d queue drops, %d duplicated, %d corrupted, %d queued\n",
			s.From, s.To, s.Packets, s.Delivered, s.Lost, s.QueueDropped, s.Duplicated, s.Corrupted, s.Queued)
	}
	return nil
}

const setUsage = `Usage: streambed netem set [--name NAME] [--link A,B] [link flags]

Changes a link's profile while the network runs (bandwidth steps, outages).
Flags change only what they name; --profile replaces the whole profile first.
--link picks the link by its hosts (default: the only link); the flags apply
to both directions.

Examples:
  streambed netem set --rate 1mbit                 # step the bandwidth down
  streambed netem set --loss 0 --delay 10ms
  streambed netem set --link cache,client --profile experiments/profiles/fdsp-1-1.5mbit.yaml
`

func netemSet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	lf := newLinkFlags("set", setUsage, stderr, false)
	linkSel := lf.fs.String("link", "", "the link, as two host names: A,B")
	if err := lf.parse(args, stdout); err != nil {
		return err
	}
	st, err := netem.ReadState(lf.stateDir, lf.name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no network %q is up", lf.name)
		}
		return err
	}
	rep, err := st.Ask(ctx, netem.Request{Op: "status"})
	if err != nil {
		return err
	}
	var cur *netem.LinkState
	switch {
	case *linkSel != "":
		ab := strings.Split(*linkSel, ",")
		if len(ab) != 2 {
			return fmt.Errorf("--link %q: want two host names, A,B", *linkSel)
		}
		for i, l := range rep.Links {
			if l.A == ab[0] && l.B == ab[1] || l.A == ab[1] && l.B == ab[0] {
				cur = &rep.Links[i]
			}
		}
		if cur == nil {
			return fmt.Errorf("no link between %s and %s", ab[0], ab[1])
		}
	case len(rep.Links) == 1:
		cur = &rep.Links[0]
	default:
		return errors.New("this network has several links; pick one with --link A,B")
	}
	p := cur.Profile
	if lf.profile != "" {
		if p, err = netem.LoadProfile(lf.profile); err != nil {
			return err
		}
	}
	if err := lf.applyProfile(&p); err != nil {
		return err
	}
	rep, err = st.Ask(ctx, netem.Request{Op: "set", A: cur.A, B: cur.B, Profile: &p})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "netem: link %s → %s: %s\n", cur.A, cur.B, p.Forward)
	fmt.Fprintf(stderr, "netem: link %s → %s: %s\n", cur.B, cur.A, p.Reverse)
	return nil
}
