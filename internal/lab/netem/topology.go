package netem

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"

	"gopkg.in/yaml.v3"
)

// Topology is the hosts of an emulated network and the links between them. Each host
// is a network namespace with one address; each link joins two hosts point to point.
// A host reaches hosts it has no direct link to through the shortest chain of links
// (the hosts in between forward), so an ingest → origin → cache → client chain works
// end to end.
type Topology struct {
	Hosts []HostSpec
	Links []LinkSpec
	// Server names the host whose address commands find in STREAMBED_SERVER.
	// Default: the host called "server" if there is one, else the first host.
	Server string
	// Subnet holds the host addresses (default 10.77.0.0/24). It exists only inside
	// the network's namespaces, so it cannot clash with the machine's own networks.
	Subnet netip.Prefix
}

// HostSpec is one host. Addr is optional: hosts without one get the next free
// address of the subnet in order.
type HostSpec struct {
	Name string
	Addr netip.Addr
}

// LinkSpec joins host A to host B. Profile.Forward applies from A to B.
type LinkSpec struct {
	A, B    string
	Profile Profile
}

// DefaultSubnet holds host addresses when a topology names none: 10.77.0.0/24.
func DefaultSubnet() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 77, 0, 0}), 24)
}

// TwoHosts is the default topology: hosts "client" and "server" joined by one link
// whose forward direction is client → server.
func TwoHosts(p Profile) Topology {
	return Topology{
		Hosts:  []HostSpec{{Name: "client"}, {Name: "server"}},
		Links:  []LinkSpec{{A: "client", B: "server", Profile: p}},
		Server: "server",
	}
}

var hostName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// normalize validates the topology and fills in defaults (subnet, addresses, server).
func (t Topology) normalize() (Topology, error) {
	if len(t.Hosts) == 0 {
		return t, errors.New("topology has no hosts")
	}
	if !t.Subnet.IsValid() {
		t.Subnet = DefaultSubnet()
	}
	if !t.Subnet.Addr().Is4() {
		return t, fmt.Errorf("subnet %s: only IPv4 subnets are supported", t.Subnet)
	}
	t.Subnet = t.Subnet.Masked()
	hosts := make([]HostSpec, len(t.Hosts))
	copy(hosts, t.Hosts)
	seen := map[string]bool{}
	used := map[netip.Addr]bool{}
	for _, h := range hosts {
		if !hostName.MatchString(h.Name) {
			return t, fmt.Errorf("host name %q: use 1-20 lower-case letters, digits and dashes, starting with a letter", h.Name)
		}
		if seen[h.Name] {
			return t, fmt.Errorf("host %q appears twice", h.Name)
		}
		seen[h.Name] = true
		if h.Addr.IsValid() {
			if !t.Subnet.Contains(h.Addr) {
				return t, fmt.Errorf("host %s: address %s is outside subnet %s", h.Name, h.Addr, t.Subnet)
			}
			if used[h.Addr] {
				return t, fmt.Errorf("host %s: address %s is taken", h.Name, h.Addr)
			}
			used[h.Addr] = true
		}
	}
	next := t.Subnet.Addr().Next()
	for i := range hosts {
		if hosts[i].Addr.IsValid() {
			continue
		}
		for used[next] {
			next = next.Next()
		}
		if !t.Subnet.Contains(next) || !t.Subnet.Contains(next.Next()) { // keep broadcast free
			return t, fmt.Errorf("subnet %s has no room for %d hosts", t.Subnet, len(hosts))
		}
		hosts[i].Addr = next
		used[next] = true
	}
	t.Hosts = hosts
	links := make([]LinkSpec, len(t.Links))
	copy(links, t.Links)
	pairs := map[[2]string]bool{}
	for i, l := range links {
		if !seen[l.A] || !seen[l.B] {
			return t, fmt.Errorf("link %d (%s–%s) names an unknown host", i+1, l.A, l.B)
		}
		if l.A == l.B {
			return t, fmt.Errorf("link %d joins %s to itself", i+1, l.A)
		}
		k := [2]string{min(l.A, l.B), max(l.A, l.B)}
		if pairs[k] {
			return t, fmt.Errorf("hosts %s and %s are joined twice", l.A, l.B)
		}
		pairs[k] = true
		if err := l.Profile.Validate(); err != nil {
			return t, fmt.Errorf("link %s–%s: %w", l.A, l.B, err)
		}
	}
	t.Links = links
	if t.Server == "" {
		t.Server = hosts[0].Name
		if seen["server"] {
			t.Server = "server"
		}
	}
	if !seen[t.Server] {
		return t, fmt.Errorf("server %q is not a host", t.Server)
	}
	return t, nil
}

// routes returns, for each host, the next hop toward every host it has no direct
// link to (breadth-first, so the fewest links).
func (t Topology) routes() map[string]map[string]string {
	adj := map[string][]string{}
	for _, l := range t.Links {
		adj[l.A] = append(adj[l.A], l.B)
		adj[l.B] = append(adj[l.B], l.A)
	}
	out := map[string]map[string]string{}
	for _, h := range t.Hosts {
		first := map[string]string{} // destination → first hop
		seen := map[string]bool{h.Name: true}
		queue := []string{}
		for _, n := range adj[h.Name] {
			seen[n] = true
			first[n] = n
			queue = append(queue, n)
		}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			for _, n := range adj[cur] {
				if !seen[n] {
					seen[n] = true
					first[n] = first[cur]
					queue = append(queue, n)
				}
			}
		}
		r := map[string]string{}
		for dst, hop := range first {
			if dst != hop {
				r[dst] = hop
			}
		}
		out[h.Name] = r
	}
	return out
}

// LoadTopology reads a topology file (YAML):
//
//	subnet: 10.77.0.0/24          # optional
//	server: origin                # STREAMBED_SERVER; default "server" or the first host
//	hosts: [ingest, origin, cache, client]   # or {name: origin, addr: 10.77.0.10}
//	links:
//	  - between: [ingest, origin]
//	    profile: lan.yaml         # a profile file, relative to this file ...
//	  - between: [cache, client]
//	    profile: {delay: 25ms, rate: 4mbit}  # ... or inline
//
// A link without a profile is perfect (no delay, unlimited rate).
func LoadTopology(path string) (Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Topology{}, err
	}
	t, err := ParseTopology(data, filepath.Dir(path))
	if err != nil {
		return Topology{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

type topologyDoc struct {
	Subnet string      `yaml:"subnet"`
	Server string      `yaml:"server"`
	Hosts  []yaml.Node `yaml:"hosts"`
	Links  []struct {
		Between []string  `yaml:"between"`
		Profile yaml.Node `yaml:"profile"`
	} `yaml:"links"`
}

// ParseTopology reads a topology from YAML; dir resolves relative profile paths.
func ParseTopology(data []byte, dir string) (Topology, error) {
	var doc topologyDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return Topology{}, err
	}
	var t Topology
	t.Server = doc.Server
	if doc.Subnet != "" {
		p, err := netip.ParsePrefix(doc.Subnet)
		if err != nil {
			return t, fmt.Errorf("subnet: %w", err)
		}
		t.Subnet = p
	}
	for _, n := range doc.Hosts {
		var h HostSpec
		if n.Kind == yaml.ScalarNode {
			h.Name = n.Value
		} else {
			var hd struct {
				Name string `yaml:"name"`
				Addr string `yaml:"addr"`
			}
			if err := strictDecode(&n, &hd); err != nil {
				return t, fmt.Errorf("line %d: host: %w", n.Line, err)
			}
			h.Name = hd.Name
			if hd.Addr != "" {
				a, err := netip.ParseAddr(hd.Addr)
				if err != nil {
					return t, fmt.Errorf("line %d: host %s: %w", n.Line, hd.Name, err)
				}
				h.Addr = a
			}
		}
		t.Hosts = append(t.Hosts, h)
	}
	for i, l := range doc.Links {
		if len(l.Between) != 2 {
			return t, fmt.Errorf("link %d: between needs two host names", i+1)
		}
		spec := LinkSpec{A: l.Between[0], B: l.Between[1]}
		switch l.Profile.Kind {
		case 0:
		case yaml.ScalarNode:
			path := l.Profile.Value
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			p, err := LoadProfile(path)
			if err != nil {
				return t, fmt.Errorf("link %d: %w", i+1, err)
			}
			spec.Profile = p
		default:
			p, err := profileFromNode(&l.Profile, dir)
			if err != nil {
				return t, fmt.Errorf("link %d (%s–%s): %w", i+1, spec.A, spec.B, err)
			}
			spec.Profile = p
		}
		t.Links = append(t.Links, spec)
	}
	if _, err := t.normalize(); err != nil {
		return t, err
	}
	return t, nil
}
