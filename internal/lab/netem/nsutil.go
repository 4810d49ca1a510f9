package netem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/run/netns"

// NamespacePrefix starts the name of every namespace this package creates:
// "sbn-<run id>-<host>". Cleanup only ever removes namespaces of runs it has a
// record of.
const NamespacePrefix = "sbn-"

// ErrNotRoot is returned when the process lacks the privileges namespaces need.
var ErrNotRoot = errors.New("netem needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces")

// ip runs the ip(8) command and returns its error with its output.
func ip(ctx context.Context, args ...string) error {
	return run(ctx, "ip", args...)
}

func run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func namespaceExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// createNamespace makes a named namespace with its loopback up and IPv6 off (so no
// router solicitations cross the links), and IPv4 forwarding on (so hosts in the
// middle of a chain route).
func createNamespace(ctx context.Context, name string) error {
	if err := ip(ctx, "netns", "add", name); err != nil {
		return err
	}
	if err := ip(ctx, "-n", name, "link", "set", "lo", "up"); err != nil {
		return err
	}
	return inNamespace(name, func() error {
		for _, s := range []struct{ path, val string }{
			{"/proc/sys/net/ipv6/conf/all/disable_ipv6", "1"},
			{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "1"},
			{"/proc/sys/net/ipv4/ip_forward", "1"},
			{"/proc/sys/net/ipv4/conf/all/rp_filter", "0"},
			{"/proc/sys/net/ipv4/conf/default/rp_filter", "0"},
		} {
			if err := os.WriteFile(s.path, []byte(s.val), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("namespace %s: %w", name, err)
			}
		}
		return nil
	})
}

// deleteNamespace stops the processes still inside a namespace, then removes it.
func deleteNamespace(name string) error {
	if !namespaceExists(name) {
		return nil
	}
	killNamespacePids(name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ip(ctx, "netns", "del", name); err != nil && namespaceExists(name) {
		return err
	}
	return nil
}

// killNamespacePids ends the processes running in the namespace (those started by
// Command), politely first.
func killNamespacePids(name string) {
	pids := namespacePids(name)
	if len(pids) == 0 {
		return
	}
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if len(namespacePids(name)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range namespacePids(name) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// namespacePids lists processes whose network namespace is the named one, as
// `ip netns pids` does, without our own process.
func namespacePids(name string) []int {
	var target unix.Stat_t
	if err := unix.Stat(filepath.Join(netnsDir, name), &target); err != nil {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat("/proc/"+e.Name()+"/ns/net", &st); err != nil {
			continue
		}
		if st.Dev == target.Dev && st.Ino == target.Ino {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inNamespace runs fn on an OS thread switched into the named namespace. Sockets and
// TUN devices fn opens belong to that namespace for their whole life.
func inNamespace(name string, fn func() error) error {
	target, err := unix.Open(filepath.Join(netnsDir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	defer unix.Close(target)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlock: if switching back failed the thread must die with the
		// goroutine instead of serving other goroutines in the wrong namespace.
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// procStart returns a process's start time in clock ticks since boot, which with
// the pid identifies the process even after its pid is reused. 0 if it is gone or a
// zombie.
func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is the state (field 3); starttime is field 22.
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// alive reports whether the process pid that started at start still runs.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	s := procStart(pid)
	return s != 0 && (start == 0 || s == start)
}

// RaisePriority sets the nice value of every thread of this process (threads the Go
// runtime starts later inherit it). A forwarder at a negative nice value keeps its
// timing when other work loads the machine: the daemon behind `streambed netem up`
// runs at -10. Needs root for negative values.
func RaisePriority(nice int) error {
	var errs []error
	for range 2 { // again, for threads started meanwhile
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
