package pushclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// pushingServer serves "/" and, when the client allows it, pushes "/a" first.
func pushingServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			if p, ok := w.(http.Pusher); ok {
				_ = p.Push("/a", nil) // fails with ErrNotSupported when push is off
			}
			_, _ = w.Write([]byte("page"))
		case "/a":
			_, _ = w.Write([]byte("pushed a"))
		default:
			http.NotFound(w, r)
		}
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func TestGetClaimsPush(t *testing.T) {
	s := pushingServer(t)
	c := New(Options{Insecure: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := c.Get(ctx, s.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if page.Status != http.StatusOK || string(page.Body) != "page" || page.Pushed {
		t.Fatalf("page: %d %q pushed %v", page.Status, page.Body, page.Pushed)
	}
	a, err := c.Get(ctx, s.URL+"/a")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Pushed || string(a.Body) != "pushed a" || a.Len() != int64(len("pushed a")) {
		t.Fatalf("/a: pushed %v body %q", a.Pushed, a.Body)
	}
	st := c.Stats()
	if st.Requests != 1 || st.Promised != 1 || st.Claimed != 1 || st.UnclaimedBytes != 0 {
		t.Errorf("stats %+v", st)
	}
	if rd, wr := c.WireBytes(); rd <= 0 || wr <= 0 || rd != st.WireRead || wr != st.WireWritten {
		t.Errorf("wire bytes %d/%d, stats %d/%d", rd, wr, st.WireRead, st.WireWritten)
	}
}

func TestDisablePushAndUnclaimed(t *testing.T) {
	s := pushingServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	off := New(Options{Insecure: true, DisablePush: true})
	if _, err := off.Get(ctx, s.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if st := off.Stats(); st.Promised != 0 || len(off.Pending()) != 0 {
		t.Errorf("push disabled, yet %+v", st)
	}
	off.Close()

	on := New(Options{Insecure: true})
	if _, err := on.Get(ctx, s.URL+"/"); err != nil {
		t.Fatal(err)
	}
	// The push is never claimed: once complete it counts as unclaimed bytes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := on.Pending()
		if len(p) == 1 && p[0].Len() == int64(len("pushed a")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending %v", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
	on.Close()
	if st := on.Stats(); st.UnclaimedBytes != int64(len("pushed a")) {
		t.Errorf("unclaimed %d", st.UnclaimedBytes)
	}
}

func TestGetRejectsOtherSchemes(t *testing.T) {
	c := New(Options{})
	if _, err := c.Get(context.Background(), "ftp://example.com/x"); err == nil {
		t.Error("ftp URL accepted")
	}
}
