package cli

import (
	"errors"
	"flag"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	cause := errors.New("boom")
	cases := []struct {
		err  error
		code int
		msg  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{fmt.Errorf("play: %w", flag.ErrHelp), 0, ""},
		{cause, 1, "boom"},
		{&ExitError{Code: 3}, 3, "exit status 3"},
		{fmt.Errorf("netem run: %w", &ExitError{Code: 130, Err: cause}), 130, "netem run: boom"},
	}
	for _, c := range cases {
		if got := ExitCode(c.err); got != c.code {
			t.Errorf("%v: code %d, want %d", c.err, got, c.code)
		}
		if c.err != nil && c.err.Error() != c.msg && c.msg != "" {
			t.Errorf("message %q, want %q", c.err.Error(), c.msg)
		}
	}
	if !errors.Is(&ExitError{Code: 2, Err: cause}, cause) {
		t.Error("ExitError does not unwrap to its cause")
	}
}
