// Package cli holds one file per `streambed` subcommand. Each command parses its own
// flags, wires packages together and returns an error; main only dispatches.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// Commands lists every subcommand, in help order.
func Commands() []Command {
	cmds := []Command{
		{"serve", "serve assets and live channels over HTTP/1.1, h2c and TLS h2 (the demo with no arguments)", Serve},
		{"package", "encode a media file (or a synthetic clip) into a CMAF ladder with DASH and HLS manifests", Package},
		{"play", "play a stream headlessly and report QoE (start-up, stalls, bitrate, latency)", Play},
		{"netem", "build emulated networks of namespaces: up, exec, down, run", Netem},
		{"lab", "run an experiment scenario and write its report", Lab},
		{"channel", "create, list, show and delete the publishing points (live channels fed by encoders) of a running origin", Channel},
		{"encode", "run a live encoder posting CMAF tracks to an origin's ingest URL (FFmpeg, or a replay of a ladder encoded once)", Encode},
		{"cdn", "write (and --run) an nginx or Varnish cache configuration for a shield or edge in front of origins", CDN},
		{"load", "run N concurrent clients of a live channel over ws, http1 or http2 and measure what each received; --mode dash-live|hls-live|abr: the workload generator (players' requests, ramps, Poisson arrivals, mergeable reports)", Load},
	}
	return cmds
}

// Usage writes the top-level help.
func Usage(w io.Writer) {
	fmt.Fprintln(w, "streambed — a live and on-demand streaming origin with a lab that measures its transports.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: streambed COMMAND [flags]   (streambed COMMAND --help for a command's flags)")
	fmt.Fprintln(w)
	cmds := Commands()
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-9s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Start with `streambed serve` and open http://localhost:8080/.")
}

// Find returns the command called name.
func Find(name string) (Command, error) {
	for _, c := range Commands() {
		if c.Name == name {
			return c, nil
		}
	}
	return Command{}, fmt.Errorf("unknown command %q; commands: %s", name, strings.Join(names(), ", "))
}

func names() []string {
	var n []string
	for _, c := range Commands() {
		n = append(n, c.Name)
	}
	return n
}

// ExitError is an error that carries the exit status of the process: a command that
// ran another program (`netem exec`, `netem run`) exits with that program's status.
// main prints Err, when there is one, and exits with Code; commands never call
// os.Exit themselves.
type ExitError struct {
	Code int
	Err  error // nil: the status says it all (the program printed its own errors)
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the process exit status for err returned by a command: 0 for nil or
// flag.ErrHelp (help was asked for), an ExitError's Code, else 1.
func ExitCode(err error) int {
	var ee *ExitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		return ee.Code
	}
	return 1
}
