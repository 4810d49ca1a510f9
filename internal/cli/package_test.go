package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

func TestPackageHelp(t *testing.T) {
	var out, errb bytes.Buffer
	err := Package(context.Background(), []string{"--help"}, &out, &errb)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"streambed package IN -o DIR", "--synthetic", "-segment-duration", "-ladder",
		"-audio-bitrate", "-fps", "-preset", "-name", "Examples:", "loop period"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestPackageUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no input"},
		{[]string{"a.mp4"}, "no output folder"},
		{[]string{"a.mp4", "b.mp4", "-o", "x"}, "one input file"},
		{[]string{"a.mp4", "--synthetic", "8s", "-o", "x"}, "not both"},
		{[]string{"--synthetic", "8s", "-o", "x", "--ladder", "360p"}, "HEIGHTp:BITRATE"},
		{[]string{"--synthetic", "8s", "-o", "x", "--audio-bitrate", "loud"}, "--audio-bitrate"},
		{[]string{"--synthetic", "8s", "-o", "x", "--segment-duration", "fast"}, "invalid value"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		err := Package(context.Background(), tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error()+errb.String(), tc.want) {
			t.Errorf("Package(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestPackageSyntheticAndUpToDate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "clip")
	args := []string{"--synthetic", "8s", "-o", dir, "--ladder", "180p:100k", "--audio-bitrate", "64k", "--preset", "ultrafast"}
	var out, errb bytes.Buffer
	if err := Package(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), `packaged "clip"`) || !strings.Contains(out.String(), "v180 avc1.") {
		t.Errorf("stdout: %s", out.String())
	}
	if _, err := media.LoadAsset(dir); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	// Flags may also come after the positional-free form in any order.
	if err := Package(context.Background(), append([]string{"-o", dir}, args...), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "up to date") {
		t.Errorf("second run: %s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "stream.json")); err != nil {
		t.Fatal(err)
	}
}
