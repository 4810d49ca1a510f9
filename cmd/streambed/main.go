// Command streambed is the one binary: it dispatches to a subcommand in internal/cli.
package main

import (
	"context"
	"errors"
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
		// A bare ExitError (another program's status) has nothing to add.
		var ee *cli.ExitError
		code := cli.ExitCode(err)
		if code != 0 && !(errors.As(err, &ee) && ee.Err == nil) {
			fmt.Fprintf(os.Stderr, "streambed %s: %v\n", cmd.Name, err)
		}
		stop()
		os.Exit(code)
	}
}
