//go:build unix

package encoder

import "syscall"

// interruptSignal asks FFmpeg to stop as if a person pressed q: it closes its outputs.
var interruptSignal = syscall.SIGINT
