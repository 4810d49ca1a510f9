package cdn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
)

// Binary finds the cache program: nginx, or varnishd for Varnish. Debian installs both
// in /usr/sbin, which a user's PATH may not include.
func Binary(k Kind) (string, error) {
	name := map[Kind]string{Nginx: "nginx", Varnish: "varnishd"}[k]
	if name == "" {
		return "", fmt.Errorf("cache %q: want nginx or varnish", k)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	pkg := map[Kind]string{Nginx: "nginx", Varnish: "varnish"}[k]
	return "", fmt.Errorf("%s not found: install it (Debian: apt-get install %s)", name, pkg)
}

// Prepared is a configuration written to disk, and how to run it.
type Prepared struct {
	Config string   // the file written: nginx.conf or default.vcl
	Binary string   // the program, when found ("" if not installed)
	Args   []string // its arguments, foreground
	Logs   []string // where it logs
}

// Write writes the configuration for o into o.Dir (atomically), makes the folders
// the program needs there, and returns how to run it.
func Write(o Options) (*Prepared, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	p := &Prepared{}
	p.Binary, _ = Binary(o.Kind)
	switch o.Kind {
	case Nginx:
		conf, err := NginxConfig(o)
		if err != nil {
			return nil, err
		}
		for _, d := range []string{"tmp", "cache"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				return nil, err
			}
		}
		p.Config = filepath.Join(dir, "nginx.conf")
		if err := fsutil.WriteFileAtomic(p.Config, conf, 0o644); err != nil {
			return nil, err
		}
		p.Args = []string{"-p", dir, "-c", p.Config, "-e", filepath.Join(dir, "error.log")}
		p.Logs = []string{filepath.Join(dir, "error.log"), filepath.Join(dir, "access.log")}
	case Varnish:
		vcl, err := VarnishVCL(o)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		p.Config = filepath.Join(dir, "default.vcl")
		if err := fsutil.WriteFileAtomic(p.Config, vcl, 0o644); err != nil {
			return nil, err
		}
		if p.Args, err = VarnishArgs(o, p.Config); err != nil {
			return nil, err
		}
		p.Logs = []string{filepath.Join(dir, "varnishd.log")}
	}
	return p, nil
}

// Check asks the program whether the written configuration is valid (nginx -t,
// varnishd -C), returning its complaint as the error.
func (p *Prepared) Check(ctx context.Context) error {
	if p.Binary == "" {
		return errors.New("the cache program is not installed")
	}
	var args []string
	if filepath.Base(p.Binary) == "nginx" {
		args = append([]string{"-t", "-q"}, p.Args...)
	} else {
		args = []string{"-C", "-n", argAfter(p.Args, "-n"), "-f", p.Config}
		if j := argAfter(p.Args, "-j"); j != "" {
			args = append(args, "-j", j)
		}
	}
	out, err := exec.CommandContext(ctx, p.Binary, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s rejects %s: %w\n%s", filepath.Base(p.Binary), p.Config, err, out)
	}
	return nil
}

// Run starts the program in the foreground and waits for it. When ctx ends it asks
// the program to stop (SIGTERM: nginx and varnishd stop at once, closing their
// connections), and kills it if it has not stopped within 10 s. The program's own
// output goes to out; Varnish's also to varnishd.log in the folder.
func (p *Prepared) Run(ctx context.Context, out io.Writer) error {
	if p.Binary == "" {
		return errors.New("the cache program is not installed")
	}
	cmd := exec.Command(p.Binary, p.Args...)
	cmd.Stdout, cmd.Stderr = out, out
	if filepath.Base(p.Binary) == "varnishd" {
		f, err := os.OpenFile(p.Logs[0], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		w := io.MultiWriter(out, f)
		cmd.Stdout, cmd.Stderr = w, w
	}
	// Its own process group: a terminal's Ctrl-C reaches us, and we stop it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Binary, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s exited: %w (see %v)", filepath.Base(p.Binary), err, p.Logs)
		}
		return fmt.Errorf("%s exited (see %v)", filepath.Base(p.Binary), p.Logs)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	return nil
}

// argAfter is the value of flag name in args ("" if absent).
func argAfter(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}
