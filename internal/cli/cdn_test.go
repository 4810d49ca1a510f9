package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCDNWritesConfiguration(t *testing.T) {
	for _, c := range []struct {
		args []string
		file string
		want string
	}{
		{[]string{"nginx", "--upstream", "http://127.0.0.1:8080,http://127.0.0.1:8081", "--listen", "127.0.0.1:8090"}, "nginx.conf", "server 127.0.0.1:8081"},
		{[]string{"--role", "edge", "--upstream", "127.0.0.1:8090", "varnish", "--listen", ":8091"}, "default.vcl", "directors.shard()"},
	} {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		if err := CDN(context.Background(), append(c.args, "--out", dir), &out, &errb); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, errb.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil || !strings.Contains(string(b), c.want) {
			t.Errorf("%v: %s lacks %q (%v)", c.args, c.file, c.want, err)
		}
		if !strings.Contains(out.String(), "wrote "+filepath.Join(dir, c.file)) {
			t.Errorf("%v: output %q", c.args, out.String())
		}
	}
}

func TestCDNRejectsMistakes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--upstream", "http://a:1"}, "say which cache"},
		{[]string{"squid", "--upstream", "http://a:1"}, "say which cache"},
		{[]string{"nginx"}, "--upstream"},
		{[]string{"nginx", "--upstream", "https://a:1"}, "only http://"},
		{[]string{"nginx", "--upstream", "http://a:1", "--role", "middle"}, "role"},
		{[]string{"nginx", "--upstream", "http://a:1", "--listen", "8080"}, "listen"},
		{[]string{"nginx", "--upstream", "http://a:1", "extra"}, "unexpected"},
	} {
		var out, errb bytes.Buffer
		err := CDN(context.Background(), append(c.args, "--out", t.TempDir()), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

func TestPullFlag(t *testing.T) {
	var p pullList
	for _, ok := range []string{"edge=http://origin:8080/live/demo/manifest.mpd", "b.2=https://o/live/x/manifest.mpd"} {
		if err := p.Set(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if len(p) != 2 || p[0].Name != "edge" || p[1].Pull != "https://o/live/x/manifest.mpd" {
		t.Errorf("parsed %+v", p)
	}
	for _, bad := range []string{"edge", "=http://o/m.mpd", "a b=http://o/m.mpd", "edge=origin:8080/m.mpd", "edge=ftp://o/m.mpd", "edge=http:///m.mpd"} {
		if err := p.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
