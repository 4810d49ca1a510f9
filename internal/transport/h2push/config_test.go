package h2push

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestConfigYAML(t *testing.T) {
	var c Config
	dec := yaml.NewDecoder(strings.NewReader("default: k5\nrules: /tmp/r.json\nadmin_token: x\nmax_active: 2\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Default.String() != "k5" || c.Rules != "/tmp/r.json" || c.AdminToken != "x" || c.MaxActive != 2 {
		t.Errorf("%+v", c)
	}
	if err := yaml.Unmarshal([]byte("default: k0\n"), &c); err == nil || !strings.Contains(err.Error(), "push strategy") {
		t.Errorf("a bad strategy: %v", err)
	}
}
