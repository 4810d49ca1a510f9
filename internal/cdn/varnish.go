package cdn

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"text/template"
)

// VarnishVCL is the VCL for o.
func VarnishVCL(o Options) ([]byte, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = varnishTemplate.Execute(&b, map[string]any{
		"O": o, "Retries": len(o.Upstreams),
		"LockTimeout": int(o.LockTimeout.Seconds()),
	})
	return b.Bytes(), err
}

// VarnishArgs is the varnishd command line that runs the VCL at vclPath in the
// foreground, with its working folder under o.Dir. Defaults that would cache a
// response without caching headers (default_ttl 120 s) are set to nothing, so the
// origin's Cache-Control alone decides.
func VarnishArgs(o Options, vclPath string) ([]string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(o.Listen)
	// As root, varnishd's default jail runs the VCL compiler and the cache as users
	// who may not enter Dir (a folder under /root or t.TempDir()); as nginx's
	// workers do here, it then stays root unless a user is named.
	var jail []string
	switch {
	case o.User != "":
		jail = []string{"-j", "unix,user=" + o.User}
	case os.Geteuid() == 0:
		jail = []string{"-j", "none"}
	}
	return append(jail,
		"-F",
		"-n", filepath.Join(dir, "varnish"),
		"-a", net.JoinHostPort(host, port),
		"-f", vclPath,
		"-s", fmt.Sprintf("malloc,%dm", o.CacheSize>>20),
		"-T", "none", // no management port: stop it with a signal
		"-P", filepath.Join(dir, "varnishd.pid"),
		"-p", "default_ttl=0",
		"-p", "default_grace=0",
		"-p", "default_keep=0",
		"-p", "max_retries="+fmt.Sprint(len(o.Upstreams)+1),
	), nil
}

var varnishTemplate = template.Must(template.New("vcl").Parse(`vcl 4.1;
# Streambed {{.O.Role}} cache — written by ` + "`streambed cdn varnish`" + `; docs/cdn.md explains it.

import directors;

# An upstream is healthy while it answers /time (cheap, never cached).
probe streambed_health {
    .url = "/time";
    .interval = 1s;
    .timeout = 1s;
    .window = 3;
    .threshold = 2;
    .initial = 2;
}
{{range $i, $u := .O.Upstreams}}
backend upstream{{$i}} {
    .host = "{{$u.Host}}";
    .port = "{{$u.Port}}";
    .probe = streambed_health;
    .connect_timeout = 2s;
    .first_byte_timeout = {{$.LockTimeout}}s;
    .between_bytes_timeout = {{$.LockTimeout}}s;
}
{{end}}
sub vcl_init {
{{- if eq .O.Role "edge"}}
    # An edge spreads objects over its shields by URL, so each object is fetched
    # through one shield (one origin request per object per shield).
    new upstreams = directors.shard();
{{- range $i, $u := .O.Upstreams}}
    upstreams.add_backend(upstream{{$i}});
{{- end}}
    upstreams.reconfigure();
{{- else}}
    # Byte-identical segments on every origin: any one may answer.
    new upstreams = directors.round_robin();
{{- range $i, $u := .O.Upstreams}}
    upstreams.add_backend(upstream{{$i}});
{{- end}}
{{- end}}
}

sub vcl_recv {
    set req.backend_hint = upstreams.backend();
    # WebSocket push and live ingest are connections, not objects: passed through.
    if (req.http.Upgrade ~ "(?i)websocket" || req.url ~ "^/ingest/") {
        return (pipe);
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    if (!req.http.X-Forwarded-Proto) {
        set req.http.X-Forwarded-Proto = "http";
    }
    # Streambed sets no cookies; a browser's own would make every request a miss.
    unset req.http.Cookie;
    return (hash);
}

sub vcl_hash {
    # The whole URL with its query string: HLS blocking reloads (_HLS_msn, _HLS_part,
    # _HLS_skip) and ?nowMS= are different objects. Host and scheme too: manifests
    # carry absolute URLs made from them.
    hash_data(req.url);
    hash_data(req.http.host);
    hash_data(req.http.X-Forwarded-Proto);
    return (lookup);
}

sub vcl_pipe {
    if (req.http.Upgrade) {
        set bereq.http.Upgrade = req.http.Upgrade;
        set bereq.http.Connection = req.http.Connection;
    }
}

sub vcl_backend_response {
    # Failover: a failing upstream's answer is fetched again from the next one.
    if (beresp.status >= 500 && bereq.retries < {{.Retries}}) {
        return (retry);
    }
    if (beresp.ttl <= 0s || beresp.http.Cache-Control ~ "(?i)no-cache|no-store|private") {
        # Not cacheable (a live segment not there yet, the API): remembered as such
        # for one second only, so that the next, cacheable answer for the same URL
        # (the segment once it exists) is collapsed again; the built-in VCL's two
        # minutes would send every request for it upstream.
        set beresp.uncacheable = true;
        set beresp.ttl = 1s;
        return (deliver);
    }
    # Stale-while-revalidate: an expired object is served while one background fetch
    # refreshes it, for at most as long as the object lived (a live manifest: a
    # fraction of a segment).
    set beresp.grace = beresp.ttl;
    # Segments in progress are streamed to every waiting client as they arrive
    # (the default); a fetch that fails part-way is not cached.
    set beresp.do_stream = true;
    return (deliver);
}

sub vcl_backend_error {
    if (bereq.retries < {{.Retries}}) {
        return (retry);
    }
}

sub vcl_deliver {
    if (obj.uncacheable) {
        set resp.http.X-Cache-{{.O.Role}} = "PASS";
    } elsif (obj.hits == 0) {
        set resp.http.X-Cache-{{.O.Role}} = "MISS";
    } elsif (obj.ttl <= 0s) {
        # A stale copy served while it is refreshed goes on as not cacheable: a tier
        # below that ignores Age (nginx) would keep it a whole max-age more.
        set resp.http.X-Cache-{{.O.Role}} = "STALE";
        set resp.http.Cache-Control = "no-cache";
    } else {
        set resp.http.X-Cache-{{.O.Role}} = "HIT";
    }
}
`))
