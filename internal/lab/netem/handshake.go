package netem

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The start-up handshake of a daemon that owns a network (`streambed netem up`
// starts `streambed netem forward`): the starting process runs the daemon with
// StartDaemon and waits for one JSON line on its stdout, a Ready; the daemon brings
// the network up with RunDaemon, writes the State file, says Ready (or why it
// failed) with Announce and serves until SIGTERM.

// DaemonReadyTimeout bounds how long StartDaemon waits for the daemon's Ready line.
const DaemonReadyTimeout = 60 * time.Second

// Ready is a daemon's first line on stdout to the process that started it.
type Ready struct {
	Error string      `json:"error,omitempty"`
	State State       `json:"state"`
	Links []LinkState `json:"links,omitempty"`
}

// LogPath is where the daemon of the network called name logs: beside its state.
func LogPath(stateDir, name string) string {
	return strings.TrimSuffix(StatePath(stateDir, name), ".json") + ".log"
}

// StartDaemon starts argv as a daemon in a session of its own (it survives the
// starting shell), its stderr appended to logPath, and waits for its Ready line:
// at most DaemonReadyTimeout, or until ctx ends (then the daemon is stopped). It
// fails with the daemon's own error when the daemon says it failed. On success the
// daemon runs on, released.
func StartDaemon(ctx context.Context, argv []string, logPath string) (Ready, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return Ready{}, err
	}
	defer logf.Close()
	daemon := exec.Command(argv[0], argv[1:]...)
	daemon.Stderr = logf
	daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // survives this shell
	out, err := daemon.StdoutPipe()
	if err != nil {
		return Ready{}, err
	}
	if err := daemon.Start(); err != nil {
		return Ready{}, err
	}
	ready := make(chan Ready, 1)
	go func() {
		var r Ready
		line, err := bufio.NewReader(out).ReadBytes('\n')
		if err != nil {
			r.Error = "daemon exited before it was ready; see " + logPath
		} else if err := json.Unmarshal(line, &r); err != nil {
			r.Error = "daemon said " + strings.TrimSpace(string(line))
		}
		ready <- r
	}()
	var r Ready
	select {
	case r = <-ready:
	case <-time.After(DaemonReadyTimeout):
		_ = daemon.Process.Kill()
		r.Error = fmt.Sprintf("daemon not ready after %.0fs; see %s", DaemonReadyTimeout.Seconds(), logPath)
	case <-ctx.Done():
		_ = daemon.Process.Signal(syscall.SIGTERM)
		_ = daemon.Wait()
		return Ready{}, ctx.Err()
	}
	if r.Error != "" {
		_ = daemon.Wait()
		return r, errors.New(r.Error)
	}
	_ = daemon.Process.Release()
	return r, nil
}

// RunDaemon is the daemon's side: it brings topo up, serves it under opts.Name (see
// Serve) and announces Ready on stdout once the state file is written, then runs
// until ctx ends or the network fails. A failure to come up is announced too.
func RunDaemon(ctx context.Context, topo Topology, opts Options, stdout io.Writer) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n, err := Up(ctx, topo, opts)
	if err != nil {
		Announce(stdout, Ready{Error: err.Error()})
		return err
	}
	st := n.State(opts.Name)
	st.Log = LogPath(opts.StateDir, opts.Name)
	r := Ready{State: st}
	for _, l := range n.Links() {
		p, _ := n.Link(l[0], l[1])
		r.Links = append(r.Links, LinkState{A: l[0], B: l[1], Profile: p})
	}
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, n, st) }()
	// Serve writes the state before it accepts; wait for the file.
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(StatePath(opts.StateDir, opts.Name)); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	Announce(stdout, r)
	log.Info("netem up", "name", opts.Name, "id", st.ID, "backend", st.Backend)
	err = <-served
	log.Info("netem down", "name", opts.Name, "err", err)
	return err
}

// Announce writes r as the daemon's one line to the process that started it, then
// points the daemon's stdout (when it is a file) at /dev/null, so the starter sees
// end of file and nothing blocks on a pipe nobody reads.
func Announce(stdout io.Writer, r Ready) {
	b, _ := json.Marshal(r)
	fmt.Fprintf(stdout, "%s\n", b)
	f, ok := stdout.(*os.File)
	if !ok {
		return
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer null.Close()
	_ = unix.Dup3(int(null.Fd()), int(f.Fd()), 0)
}
