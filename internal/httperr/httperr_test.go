package httperr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

func TestStatusIsTheInverseOfKindOfStatus(t *testing.T) {
	for _, kind := range []error{media.ErrBadRequest, media.ErrNotFound, media.ErrGone, media.ErrUnavailable} {
		err := fmt.Errorf("segment 7: %w", kind)
		if got := media.KindOfStatus(Status(err)); got != kind {
			t.Errorf("%v → %d → %v", kind, Status(err), got)
		}
	}
	if s := Status(media.ErrNotYet); s != http.StatusNotFound {
		t.Errorf("not yet: %d", s)
	}
	if s := Status(errors.New("disk on fire")); s != http.StatusInternalServerError {
		t.Errorf("plain error: %d", s)
	}
	wrapped := fmt.Errorf("rules: %w", WithStatus(http.StatusUnauthorized, media.ErrNotFound))
	if s := Status(wrapped); s != http.StatusUnauthorized || !errors.Is(wrapped, media.ErrNotFound) {
		t.Errorf("with status: %d", s)
	}
	if WithStatus(400, nil) != nil {
		t.Error("WithStatus(nil) is not nil")
	}
}

func TestWrite(t *testing.T) {
	cases := []struct {
		err    error
		status int
		cache  string
		msg    string
	}{
		{fmt.Errorf("segment 9: %w", media.ErrNotYet), 404, "no-cache", "segment 9: not yet available"},
		{fmt.Errorf("segment 1: %w", media.ErrGone), 410, "public, max-age=60", ""},
		{fmt.Errorf("asset x: %w", media.ErrNotFound), 404, "no-store", ""},
		{WithStatus(http.StatusUnauthorized, errors.New("missing token")), 401, "no-store", "missing token"},
		{errors.New("open /secret: permission denied"), 500, "no-store", "internal error; see the server log"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		rec.Header().Set("ETag", `"x"`)
		rec.Header().Set("Content-Length", "1234")
		Write(rec, c.err)
		var b Body
		if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
			t.Fatalf("%v: %v", c.err, err)
		}
		want := c.msg
		if want == "" {
			want = c.err.Error()
		}
		h := rec.Header()
		if rec.Code != c.status || b.Status != c.status || b.Error != want || h.Get("Cache-Control") != c.cache ||
			h.Get("Content-Type") != "application/json" || h.Get("ETag") != "" || h.Get("Content-Length") != "" {
			t.Errorf("%v: %d %+v %v", c.err, rec.Code, b, h)
		}
	}
}
