package netem

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
)

// A network that outlives one command (the CLI's `up`) is owned by a daemon process
// that runs Up and then Serve. State is what it leaves in the state folder so later
// commands can find its hosts, ask for statistics, change a link, and stop it.

// State describes a network owned by a daemon.
type State struct {
	Name     string      `json:"name"`
	ID       string      `json:"id"`
	PID      int         `json:"pid"`
	PIDStart uint64      `json:"pid_start"`
	Backend  Backend     `json:"backend"`
	Why      string      `json:"why"`
	Server   string      `json:"server"`
	Hosts    []StateHost `json:"hosts"`
	Links    [][2]string `json:"links"`
	Socket   string      `json:"socket"`
	Log      string      `json:"log,omitempty"`
	Created  time.Time   `json:"created"`
}

// StateHost is one host of a State.
type StateHost struct {
	Name      string     `json:"name"`
	Namespace string     `json:"namespace"`
	Addr      netip.Addr `json:"addr"`
}

// StatePath is where the state of the network called name lives.
func StatePath(stateDir, name string) string {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	return filepath.Join(stateDir, name+".json")
}

// State describes n for a daemon serving it under name.
func (n *Network) State(name string) State {
	st := State{
		Name: name, ID: n.id, PID: os.Getpid(), PIDStart: procStart(os.Getpid()),
		Backend: n.backend, Why: n.reason, Server: n.topo.Server, Links: n.Links(),
		Socket:  filepath.Join(n.opts.StateDir, name+".sock"),
		Created: time.Now(),
	}
	for _, h := range n.topo.Hosts {
		st.Hosts = append(st.Hosts, StateHost{Name: h.Name, Namespace: n.hosts[h.Name].ns, Addr: h.Addr})
	}
	return st
}

// ReadState reads the state of the network called name. It fails with
// os.ErrNotExist when no such network was brought up.
func ReadState(stateDir, name string) (State, error) {
	var st State
	b, err := os.ReadFile(StatePath(stateDir, name))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("state %s: %w", StatePath(stateDir, name), err)
	}
	return st, nil
}

// Alive reports whether the daemon owning the network still runs.
func (s State) Alive() bool { return alive(s.PID, s.PIDStart) }

// Addr is a host's address.
func (s State) Addr(host string) netip.Addr {
	for _, h := range s.Hosts {
		if h.Name == host {
			return h.Addr
		}
	}
	return netip.Addr{}
}

// Env is what Network.Env would give for host.
func (s State) Env(host string) []string {
	m := map[string]netip.Addr{}
	for _, h := range s.Hosts {
		m[h.Name] = h.Addr
	}
	return hostEnv(host, s.Addr(s.Server), m)
}

// CommandContext runs argv in host, as Network.CommandContext does.
func (s State) CommandContext(ctx context.Context, host string, argv ...string) (*exec.Cmd, error) {
	for _, h := range s.Hosts {
		if h.Name == host {
			return nsCommand(ctx, h.Namespace, append(os.Environ(), s.Env(host)...), argv), nil
		}
	}
	var names []string
	for _, h := range s.Hosts {
		names = append(names, h.Name)
	}
	return nil, fmt.Errorf("netem: network %s has no host %q (hosts: %v)", s.Name, host, names)
}

// Stop asks the daemon to remove the network and waits up to timeout for it to exit.
func (s State) Stop(timeout time.Duration) error {
	if !s.Alive() {
		return nil
	}
	if err := syscall.Kill(s.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !s.Alive() {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	if s.Alive() {
		_ = syscall.Kill(s.PID, syscall.SIGKILL)
		return fmt.Errorf("netem: daemon %d did not stop in %v; killed it", s.PID, timeout)
	}
	return nil
}

// Request is one control message to a daemon.
type Request struct {
	Op      string   `json:"op"` // "status" or "set"
	A       string   `json:"a,omitempty"`
	B       string   `json:"b,omitempty"`
	Profile *Profile `json:"profile,omitempty"`
}

// Reply answers a Request.
type Reply struct {
	Error string           `json:"error,omitempty"`
	Links []LinkState      `json:"links,omitempty"`
	Stats []DirectionStats `json:"stats,omitempty"`
}

// LinkState is a link and its profile (Forward from A to B).
type LinkState struct {
	A       string  `json:"a"`
	B       string  `json:"b"`
	Profile Profile `json:"profile"`
}

// Ask sends a request to the daemon of s.
func (s State) Ask(ctx context.Context, req Request) (Reply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", s.Socket)
	if err != nil {
		return Reply{}, fmt.Errorf("netem: daemon of %s: %w", s.Name, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&rep); err != nil {
		return Reply{}, fmt.Errorf("netem: daemon of %s: %w", s.Name, err)
	}
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// Serve writes st to the state folder and answers control requests on st.Socket
// until ctx is done or the network closes; then it closes the network and removes
// the state. The daemon behind `streambed netem up` runs it.
func Serve(ctx context.Context, n *Network, st State) error {
	_ = os.Remove(st.Socket)
	ln, err := net.Listen("unix", st.Socket)
	if err != nil {
		return err
	}
	path := StatePath(n.opts.StateDir, st.Name)
	defer func() {
		ln.Close()
		_ = os.Remove(st.Socket)
		_ = os.Remove(path)
	}()
	if err := fsutil.WriteJSONAtomic(path, st, 0o644); err != nil {
		return err
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-n.Done():
		}
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		go n.answer(c)
	}
	return n.Close()
}

func (n *Network) answer(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var req Request
	var rep Reply
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
		rep.Error = "bad request: " + err.Error()
	} else {
		switch req.Op {
		case "status":
		case "set":
			if req.Profile == nil {
				rep.Error = "set needs a profile"
			} else if err := n.SetLink(req.A, req.B, *req.Profile); err != nil {
				rep.Error = err.Error()
			}
		default:
			rep.Error = fmt.Sprintf("unknown op %q", req.Op)
		}
	}
	for _, l := range n.Links() {
		p, _ := n.Link(l[0], l[1])
		rep.Links = append(rep.Links, LinkState{A: l[0], B: l[1], Profile: p})
	}
	rep.Stats = n.Stats()
	_ = json.NewEncoder(c).Encode(rep)
}
