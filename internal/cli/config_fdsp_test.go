package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigFDSPSection(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("fdsp:\n  listen: \":9710\"\n  udp: \":9800\"\n  substream: 4s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FDSP.Listen != ":9710" || cfg.FDSP.UDP != ":9800" || cfg.FDSP.Substream != 4*time.Second {
		t.Fatalf("fdsp section: %+v", cfg.FDSP)
	}
	if DefaultConfig().FDSP.Listen != "" {
		t.Fatal("FDSP is on by default")
	}
}

func TestConfigFDSPCongestionControl(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("fdsp:\n  listen: \":9710\"\n  cc: reno\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FDSP.CC != "reno" {
		t.Fatalf("fdsp.cc: %+v", cfg.FDSP)
	}
}
