//go:build !linux

package wspush

import "errors"

// fanWriteSupported: the fan-out's raw writev is Linux's; elsewhere every session
// takes the per-session path.
const fanWriteSupported = false

type iovec struct{}

func (fo *fanout) writev(*session, []item) (int, error) {
	return 0, errors.New("wspush: no fan-out writes on this platform")
}

func (fo *fanout) writevFD(uintptr) bool { return true }

// sharedFrames: no shared frame files on this platform.
type sharedFrames struct{}

func (sharedFrames) release() {}
