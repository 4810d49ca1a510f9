package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/streambed/streambed/internal/cdn"
)

const cdnUsage = `Usage: streambed cdn nginx|varnish --upstream URL[,URL2...] --listen ADDR [flags]

Writes a configuration for a real cache in front of Streambed (nginx, or Varnish
from the Debian packages nginx and varnish) into --out, and with --run starts it
in the foreground until Ctrl-C or SIGTERM.

  # a shield in front of two origins serving the same looped channel
  streambed cdn nginx --upstream http://10.0.0.1:8080,http://10.0.0.2:8080 --listen :8090 --run
  # an edge in front of that shield
  streambed cdn varnish --role edge --upstream http://10.0.0.9:8090 --listen :8091 --run

What the configuration does (docs/cdn.md explains every line):
  - caches what the origin's Cache-Control says: live manifests a fraction of a
    segment, segments and inits long, a live segment that is not there yet not at all
  - collapses concurrent requests for one object into one upstream request
    (nginx proxy_cache_lock, Varnish's waiting list), a live segment in progress
    included: it is streamed on chunk by chunk as the origin sends it
  - answers an expired manifest from the cache while one request refreshes it, and
    passes such a stale answer on as not cacheable (the trap one tier down)
  - keys on the whole URL with its query string (HLS blocking reloads: _HLS_msn,
    _HLS_part, _HLS_skip), passes WebSocket upgrades (/ws/) and ingest (/ingest/)
    through uncached
  - balances over several upstreams and fails over when one is down or answers
    502/503/504 (shield: round robin; edge: by URL, one shield per object)

Files in --out: nginx.conf or default.vcl; with --run also pid and logs (nginx:
error.log, access.log with the cache status of each request; Varnish: varnishd.log,
and varnishlog/varnishncsa -n OUT/varnish for requests), and nginx's cache folder.

Flags:
`

// CDN runs `streambed cdn`.
func CDN(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cdn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		upstream = fs.String("upstream", "", "comma-separated origin (or shield) URLs, http://HOST:PORT (required)")
		listen   = fs.String("listen", ":8090", "address the cache serves on, HOST:PORT or :PORT")
		role     = fs.String("role", "shield", "shield (in front of origins) or edge (in front of shields)")
		out      = fs.String("out", "", "folder for the configuration, cache, pid and logs (default .cache/cdn-KIND-ROLE)")
		run      = fs.Bool("run", false, "start the cache in the foreground after writing its configuration")
		sizeMB   = fs.Int64("cache-mb", 1024, "cache size in MiB (nginx: on disk in --out; Varnish: memory)")
		lock     = durationFlag(fs, "lock-timeout", 0, "how long a request waits for another one fetching the same object (default 20s: longer than an origin holds a live segment or blocking reload)")
		user     = fs.String("user", "", "nginx worker user (default nginx's own; root when run as root, so workers can write --out)")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), cdnUsage)
		fs.PrintDefaults()
	}
	// The program comes first (streambed cdn nginx --flags) or after the flags.
	var kind string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		kind, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if kind == "" && fs.NArg() > 0 {
		kind = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil { // flags after the program's name
			return err
		}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; see streambed cdn --help", fs.Args())
	}
	if kind != string(cdn.Nginx) && kind != string(cdn.Varnish) {
		fs.Usage()
		return errors.New("say which cache: streambed cdn nginx or streambed cdn varnish (then --upstream and --listen)")
	}
	if *upstream == "" {
		return errors.New("--upstream: give the origin, e.g. --upstream http://127.0.0.1:8080")
	}
	ups, err := cdn.ParseUpstreams(*upstream)
	if err != nil {
		return fmt.Errorf("--upstream: %w", err)
	}
	dir := *out
	if dir == "" {
		dir = fmt.Sprintf(".cache/cdn-%s-%s", kind, *role)
	}
	p, err := cdn.Write(cdn.Options{Kind: cdn.Kind(kind), Role: cdn.Role(*role), Upstreams: ups, Listen: *listen,
		Dir: dir, CacheSize: *sizeMB << 20, LockTimeout: *lock, User: *user})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", p.Config)
	if !*run {
		if p.Binary == "" {
			_, err := cdn.Binary(cdn.Kind(kind))
			fmt.Fprintf(stderr, "note: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "run it: %s %s\n", p.Binary, strings.Join(p.Args, " "))
		}
		return nil
	}
	if p.Binary == "" {
		_, err := cdn.Binary(cdn.Kind(kind))
		return err
	}
	if err := p.Check(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s cache on %s in front of %v; logs: %s (Ctrl-C stops it)\n", kind, *role, *listen, ups, strings.Join(p.Logs, ", "))
	return p.Run(ctx, stderr)
}
