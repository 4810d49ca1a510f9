package netem

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartDaemonHandshake(t *testing.T) {
	dir := t.TempDir()
	var line bytes.Buffer
	Announce(&line, Ready{State: State{Name: "lab", PID: 42}})
	cases := []struct {
		name, script, err string
		pid               int
	}{
		{"ready", "echo '" + strings.TrimSpace(line.String()) + "'", "", 42},
		{"failed", `echo '{"error":"no root"}'; exit 1`, "no root", 0},
		{"died", "echo oops >&2; exit 3", "daemon exited before it was ready", 0},
		{"garbage", "echo hello", "daemon said hello", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logPath := filepath.Join(dir, c.name+".log")
			r, err := StartDaemon(context.Background(), []string{"sh", "-c", c.script}, logPath)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("err %v, want %q", err, c.err)
			}
			if r.State.PID != c.pid {
				t.Errorf("ready %+v", r)
			}
		})
	}
}

func TestAnnounceWritesOneLine(t *testing.T) {
	var b bytes.Buffer
	Announce(&b, Ready{Error: "x"})
	var r Ready
	if err := json.Unmarshal(b.Bytes(), &r); err != nil || r.Error != "x" || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("%q: %v", b.String(), err)
	}
	if got := LogPath("/run/x", "lab"); got != "/run/x/lab.log" {
		t.Errorf("log path %s", got)
	}
}
