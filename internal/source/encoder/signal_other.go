//go:build !unix

package encoder

import "os"

var interruptSignal = os.Kill
