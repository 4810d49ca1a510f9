// Command streambed is the one binary: it dispatches to a subcommand in internal/cli.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/streambed/streambed/internal/cli"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		cli.Usage(os.Stdout)
		return
	}
	cmd, err := cli.Find(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "streambed:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.Run(ctx, os.Args[2:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "streambed %s: %v\n", cmd.Name, err)
		os.Exit(1)
	}
}
