package server

import (
	"io"
	"net/http"
	"sync"
)

// h2CopyBuffer is the piece a segment file is copied to an HTTP/2 response in. Go's
// HTTP/2 server hands every Write of a handler to its connection goroutine and waits
// until the frames are written, so a piece is a round trip between goroutines:
// io.Copy's 32 KiB pieces (and a fresh 32 KiB buffer per response) made a 140 KB
// segment five round trips and 32 KiB of garbage.
const h2CopyBuffer = 64 << 10

var h2CopyBuffers = sync.Pool{New: func() any { b := make([]byte, h2CopyBuffer); return &b }}

// copyPooled copies n bytes of src to w through a pooled buffer.
func copyPooled(w http.ResponseWriter, src io.Reader, n int64) (int64, error) {
	bp := h2CopyBuffers.Get().(*[]byte)
	defer h2CopyBuffers.Put(bp)
	// writerOnly: the metrics recorder's ReadFrom would copy through io.Copy's own buffer.
	return io.CopyBuffer(writerOnly{w}, io.LimitReader(src, n), *bp)
}
