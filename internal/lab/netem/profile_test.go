package netem

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const profilesDir = "../../../experiments/profiles"

func TestFDSPProfile(t *testing.T) {
	p, err := LoadProfile(filepath.Join(profilesDir, "fdsp-2-2.5mbit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := Impairment{
		Rate:           Oscillate(2*Mbit, 2.5*Mbit, 4*time.Second, 0.5),
		Delay:          ms(25),
		Jitter:         ms(5),
		JitterReorders: true,
		Loss:           Bernoulli(0.2),
		Duplicate:      0.2,
		Corrupt:        0.2,
		Reorder:        0.2,
	}
	if !reflect.DeepEqual(p.Forward, want) || !reflect.DeepEqual(p.Reverse, want) {
		t.Errorf("fdsp-2-2.5mbit:\n got %+v\nwant %+v", p.Forward, want)
	}
	if p.Name != "fdsp-2-2.5mbit" {
		t.Errorf("name %q", p.Name)
	}
	tbf, err := LoadProfile(filepath.Join(profilesDir, "fdsp-tbf-2mbit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if f := tbf.Forward; f.Rate.Constant != 2*Mbit || f.Burst != 4096 || f.Queue.Latency != ms(400) {
		t.Errorf("token bucket: %+v", f)
	}
}

// Every shipped profile and topology loads.
func TestShippedProfiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(profilesDir, "*.yaml"))
	if len(files) < 5 {
		t.Fatalf("found %d profiles in %s", len(files), profilesDir)
	}
	for _, f := range files {
		if strings.Contains(filepath.Base(f), "topology") {
			topo, err := LoadTopology(f)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if n, err := topo.normalize(); err != nil || len(n.Hosts) != 4 || n.Server != "origin" {
				t.Errorf("%s: %+v %v", f, n, err)
			}
			continue
		}
		p, err := LoadProfile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		t.Logf("%s: forward %s; reverse %s", filepath.Base(f), p.Forward, p.Reverse)
	}
}

func TestProfileDirections(t *testing.T) {
	p, err := ParseProfile([]byte(`
delay: 15ms
forward: {rate: 5mbit}
reverse: {rate: 50mbit, delay: 20ms}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Forward.Rate.Constant != 5*Mbit || p.Forward.Delay != ms(15) {
		t.Errorf("forward %+v", p.Forward)
	}
	if p.Reverse.Rate.Constant != 50*Mbit || p.Reverse.Delay != ms(20) {
		t.Errorf("reverse %+v", p.Reverse)
	}
}

func TestProfileErrors(t *testing.T) {
	for _, bad := range []string{
		"delya: 25ms",                            // typo
		"rate: fast",                             // unit
		"loss: 120%",                             // range
		"distribution: pareto",                   // unknown
		"loss: {model: gilbert-elliott, p: 1%}",  // no r
		"loss: {model: bernoulli, p: 1%, r: 5%}", // r without GE
		"rate: {schedule: [{rate: 0, for: 1s}]}", // never carries
		"rate: {oscillate: {low: 1mbit, high: 2mbit, period: 0s}}", // no period
		"rate: {rate: 1mbit, schedule: [{rate: 2mbit, for: 1s}]}",  // two forms
		"forward: {delay: 1ms, rat: 2mbit}",                        // typo in a direction
		"queue: {packets: 10, frames: 3}",                          // typo in queue
		"rate: {trace: /nonexistent/file.trace}",                   // missing trace
	} {
		if _, err := ParseProfile([]byte(bad), ""); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestLossModels(t *testing.T) {
	ge := GilbertElliott(1, 4)
	p, r, lg, lb := ge.GEParams()
	if lg != 0 || lb != 1 || r != 0.25 || p < 0.002524 || p > 0.002526 {
		t.Errorf("GE params %v %v %v %v", p, r, lg, lb)
	}
	if m := ge.MeanLoss(); m < 0.00999 || m > 0.01001 {
		t.Errorf("GE mean %v", m)
	}
	if m := Bernoulli(2).MeanLoss(); m != 0.02 {
		t.Errorf("Bernoulli mean %v", m)
	}
	if !(Loss{}).IsZero() || Bernoulli(1).IsZero() {
		t.Error("IsZero")
	}
}

// A profile survives the JSON trip the CLI makes to the daemon.
func TestProfileJSON(t *testing.T) {
	p, err := LoadProfile(filepath.Join(profilesDir, "trace-square.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Profile
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, back) {
		t.Errorf("round trip changed the profile")
	}
	if back.Reverse.Rate.Trace == nil || len(back.Reverse.Rate.Trace.Millis) != 2500 {
		t.Errorf("trace lost")
	}
}

func TestTopology(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("delay: 7ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topo, err := ParseTopology([]byte(`
hosts: [a, b, {name: c, addr: 10.77.0.9}, d]
links:
  - between: [a, b]
    profile: p.yaml
  - between: [b, c]
    profile: {rate: 1mbit}
  - between: [c, d]
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := topo.normalize()
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{}
	for _, h := range n.Hosts {
		addrs[h.Name] = h.Addr.String()
	}
	want := map[string]string{"a": "10.77.0.1", "b": "10.77.0.2", "c": "10.77.0.9", "d": "10.77.0.3"}
	if !reflect.DeepEqual(addrs, want) {
		t.Errorf("addresses %v, want %v", addrs, want)
	}
	if n.Server != "a" {
		t.Errorf("server %q, want the first host", n.Server)
	}
	if n.Links[0].Profile.Forward.Delay != ms(7) || n.Links[1].Profile.Reverse.Rate.Constant != Mbit {
		t.Errorf("link profiles %+v", n.Links)
	}
	r := n.routes()
	if r["a"]["d"] != "b" || r["d"]["a"] != "c" || r["b"]["d"] != "c" || len(r["b"]) != 1 {
		t.Errorf("routes %v", r)
	}
	for _, bad := range []string{
		"hosts: [a, a]",
		"hosts: [A]",
		"hosts: [a, b]\nlinks: [{between: [a, x]}]",
		"hosts: [a, b]\nlinks: [{between: [a, b]}, {between: [b, a]}]",
		"hosts: [a]\nlinks: [{between: [a, a]}]",
		"hosts: [a]\nserver: z",
		"hosts: [{name: a, addr: 192.168.1.1}]",
		"hosts: [a]\nlinkz: []",
	} {
		if _, err := ParseTopology([]byte(bad), dir); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
