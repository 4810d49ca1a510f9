package server

import (
	"net/http"

	"github.com/streambed/streambed/internal/httperr"
)

// writeError answers with the one JSON error of internal/httperr: the error kind
// decides the status and the caching (a live segment not yet available is no-cache).
func writeError(w http.ResponseWriter, err error) { httperr.Write(w, err) }
