// Package netem emulates networks on one Linux machine: hosts are network
// namespaces, and links between them limit the rate, delay, jitter, lose,
// duplicate, corrupt and reorder packets the way a profile says. The lab runner
// puts origin, caches and players on such networks; `streambed netem` is the same
// thing from the command line. See docs/netem.md for a guide.
//
// # Building a network
//
// A Topology names the hosts and the links; a Profile says what a link does in
// each direction (Forward from the link's first host to its second, Reverse back).
// TwoHosts gives the default: "client" and "server" on one link.
//
//	p, _ := netem.LoadProfile("experiments/profiles/fdsp-2-2.5mbit.yaml")
//	n, err := netem.Up(ctx, netem.TwoHosts(p), netem.Options{})
//	if err != nil { ... }          // needs root
//	defer n.Close()                // also closed when ctx is done
//
//	srv := n.Command("server", "streambed", "serve")        // runs inside the host,
//	srv.Start()                                            // STREAMBED_SERVER set
//	out, _ := n.Command("client", "sh", "-c", "curl -s http://$STREAMBED_SERVER:8080/").Output()
//
//	n.Addr("server")               // netip.Addr of a host (also n.Server())
//	n.Do("client", func() error {  // Go code on a thread inside a host: sockets
//		conn, err = net.Dial(...)  // opened here belong to that host
//		return err
//	})
//
// A bandwidth step while traffic flows:
//
//	m := p.Forward
//	m.Rate = netem.ConstantRate(1 * netem.Mbit)
//	n.SetLink("client", "server", netem.Symmetric(m))
//
// Stats reports per-direction packet counters (user-space backend).
//
// # Topologies
//
// LoadTopology reads more hosts and links from YAML (ingest, origin, cache and
// client for the origin-at-scale experiments). Each host has one address in
// Topology.Subnet (10.77.0.0/24 by default); a host reaches hosts it has no link
// to through the shortest chain of links, the hosts between forwarding.
//
// # Backends
//
// BackendUserspace opens a TUN device in each host for each link and moves
// packets between them in this process: a reader goroutine per direction runs
// each packet through the link model (loss, duplication, corruption, a
// rate-limited drop-tail queue, delay with jitter and the reorder share), and a
// delivery goroutine writes it into the other host when it is due, woken by a
// timerfd (tens of microseconds late, where a Go timer can be a millisecond
// late). BackendKernel joins hosts with veth pairs shaped by tc: netem with a tbf
// child, or on a kernel without netem only tbf (rate) and an iptables random drop
// (loss). BackendAuto tries netem on a scratch veth and uses the kernel when it
// can, else user space (Network.Backend and Network.Why say which and why).
//
// # Cleanup
//
// Up writes a run record under Options.StateDir (/run/streambed-netem) naming the
// owning process and its namespaces ("sbn-<run id>-<host>") before it creates
// anything. Close removes the namespaces (stopping processes left in them) and
// the record. After a crash the record stays; the next Up, `streambed netem down`
// or CleanStale removes the namespaces of runs whose owner is dead, and only
// those.
//
// # Daemons
//
// A network that must outlive one command is owned by a daemon (`streambed netem
// up` starts one with StartDaemon): RunDaemon calls Up and then Serve, which writes
// a State file and answers status and set requests on a unix socket until SIGTERM,
// and announces Ready (or why it failed) on the daemon's stdout, the start-up
// handshake StartDaemon waits for. ReadState, State.CommandContext, State.Ask and
// State.Stop are the other side.
package netem
