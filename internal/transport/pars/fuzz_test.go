package pars

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/testmedia"
)

// contentRangeSeeds are the Content-Range headers net/http's ServeContent (what the
// origin serves segments with) answers to the ranges the client asks for.
func contentRangeSeeds(t testing.TB) []string {
	body := bytes.Repeat([]byte{7}, 100_003)
	var out []string
	for _, n := range []int{1, 2, 3, 8} {
		for _, r := range Split(int64(len(body)), n, 1) {
			req := httptest.NewRequest(http.MethodGet, "/vod/a/v/1.m4s", nil)
			req.Header.Set("Range", r.Header())
			w := httptest.NewRecorder()
			http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(body))
			if w.Code != http.StatusPartialContent {
				t.Fatalf("%s: status %d", r.Header(), w.Code)
			}
			out = append(out, w.Header().Get("Content-Range"))
		}
	}
	return out
}

func FuzzContentRange(f *testing.F) {
	for _, s := range contentRangeSeeds(f) {
		f.Add(s)
	}
	for _, s := range []string{"bytes 5-5/*", "bytes */1000", " bytes 0-0/1 ", "bytes 10-5/100", "items 0-1/2", "bytes 0-1",
		"bytes 0-9223372036854775806/9223372036854775807", "bytes +1-2/3", "bytes 1-2/-3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, size, ok := contentRange(s)
		if !ok {
			if r != (Range{}) || size != 0 {
				t.Fatalf("refused, yet returned %+v, %d", r, size)
			}
			return
		}
		last := r.End() - 1 // wraps like the computation of r.Len
		if r.Off < 0 || last < r.Off {
			t.Fatalf("range %+v (last %d)", r, last)
		}
		// Known: "bytes 0-9223372036854775807/…" overflows Len to a negative value.
		// Harmless, as the client only accepts a range equal to the one it asked for.
		if r.Len <= 0 && !(r.Off == 0 && last == math.MaxInt64) {
			t.Fatalf("range %+v", r)
		}
		// Written out as a server would, it parses to the same range and size.
		total := strconv.FormatInt(size, 10)
		if size == -1 {
			total = "*"
		}
		again := fmt.Sprintf("bytes %d-%d/%s", r.Off, last, total)
		r2, size2, ok2 := contentRange(again)
		if !ok2 || r2 != r || size2 != size {
			t.Fatalf("%q → %+v, %d; %q → %+v, %d, %v", s, r, size, again, r2, size2, ok2)
		}
		// And the range is what the client asks for with the same bytes.
		if want := fmt.Sprintf("bytes=%d-%d", r.Off, last); r.Header() != want {
			t.Fatalf("%+v asks %q, want %q", r, r.Header(), want)
		}
	})
}

// indexSeeds are segment indexes as the origin serves them (built from the test
// asset by the real handler's code, and as the client tests' origin writes them),
// and hand-written edge cases.
func indexSeeds(t testing.TB) [][]byte {
	a, err := hub.OpenAsset(testmedia.Asset(t))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, tr := range a.Info().Tracks {
		b, err := buildIndex(a, tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(Index{Track: "v", Segments: []IndexSegment{{Number: 1, Time: 7, Size: 4000}, {Number: 2, Time: 9, Size: 1}}})
	out = append(out, buf.Bytes())
	for _, s := range []string{
		`{"track":"v","segments":[]}`,
		`{"track":"v","segments":null}`,
		`{"track":"v"}`,
		`{"segments":[{"number":1,"time":7,"size":-1},{"number":1,"time":7,"size":0}]}`,
		`{"segments":[{"number":1,"size":9223372036854775807},{"time":7,"size":1e3}]}`,
		`{"segments":[{"number":1,"size":9223372036854775807},{"time":7,"size":16385}]}`,
		`{"segments":[{"number":18446744073709551615,"time":18446744073709551615,"size":5}],"extra":true}`,
		`[]`, `null`, `<html>not found</html>`, ``,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// FuzzIndex serves a fuzzed segment index beside two segments and asks the client
// their sizes, as it does before splitting a segment into ranges: the sizes come from
// the index where it lists the segment, else from HEAD; the index is fetched once,
// whatever it holds; every size splits into valid ranges.
func FuzzIndex(f *testing.F) {
	for _, s := range indexSeeds(f) {
		f.Add(s)
	}
	var (
		body                atomic.Pointer[[]byte]
		indexGets, heads    atomic.Int64
		headSize1, headSize = int64(4321), int64(5432)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/vod/a/v/index.json":
			indexGets.Add(1)
			_, _ = w.Write(*body.Load())
		case "/vod/a/v/1.m4s", "/vod/a/v/t7.m4s":
			heads.Add(1)
			n := headSize
			if r.URL.Path == "/vod/a/v/1.m4s" {
				n = headSize1
			}
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		default:
			http.NotFound(w, r)
		}
	}))
	f.Cleanup(srv.Close)
	c, err := New(Options{Connections: 2, MinRange: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })

	f.Fuzz(func(t *testing.T, b []byte) {
		body.Store(&b)
		indexGets.Store(0)
		heads.Store(0)
		c.mu.Lock()
		clear(c.indexes)
		clear(c.sizes)
		c.mu.Unlock()
		lanes, err := c.pool.get(1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.pool.put(lanes)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		// What the index says, decoded independently: the last entry for a name wins.
		want1, want2, wantHeads := headSize1, headSize, 2
		var doc Index
		if json.Unmarshal(b, &doc) == nil && doc.Segments != nil {
			in1, in2 := false, false
			for _, s := range doc.Segments {
				if s.Number == 1 {
					want1, in1 = s.Size, true
				}
				if s.Time == 7 {
					want2, in2 = s.Size, true
				}
			}
			wantHeads = 0
			for _, in := range []bool{in1, in2} {
				if !in {
					wantHeads++
				}
			}
		}
		for _, q := range []struct {
			file string
			want int64
		}{{"1.m4s", want1}, {"t7.m4s", want2}} {
			size, err := c.size(ctx, lanes[0], srv.URL+"/vod/a/v/"+q.file)
			if err != nil {
				t.Fatalf("%s: %v", q.file, err)
			}
			if size != q.want {
				t.Fatalf("%s: size %d, want %d", q.file, size, q.want)
			}
			checkSplit(t, size)
		}
		if n := indexGets.Load(); n != 1 {
			t.Fatalf("index fetched %d times, want once", n)
		}
		if n := heads.Load(); n != int64(wantHeads) {
			t.Fatalf("%d HEAD requests, want %d", n, wantHeads)
		}
	})
}

// checkSplit checks the ranges a segment of size bytes is cut into (as the client
// does, with the default MinRange and up to 8 connections): contiguous, complete,
// non-empty, even.
func checkSplit(t *testing.T, size int64) {
	t.Helper()
	for _, n := range []int{1, 3, 8} {
		rs := Split(size, n, 16<<10)
		if size <= 0 {
			if rs != nil {
				t.Fatalf("Split(%d, %d) = %v", size, n, rs)
			}
			continue
		}
		if len(rs) == 0 || len(rs) > n {
			t.Fatalf("Split(%d, %d): %d ranges", size, n, len(rs))
		}
		var off int64
		for _, r := range rs {
			if r.Off != off || r.Len <= 0 || r.Len < rs[len(rs)-1].Len || r.Len > rs[0].Len || rs[0].Len-rs[len(rs)-1].Len > 1 {
				t.Fatalf("Split(%d, %d) = %v", size, n, rs)
			}
			if len(rs) > 1 && r.Len < 16<<10 {
				t.Fatalf("Split(%d, %d) = %v: a range shorter than MinRange", size, n, rs)
			}
			off = r.End()
		}
		if off != size {
			t.Fatalf("Split(%d, %d) covers %d bytes", size, n, off)
		}
	}
}

// FuzzPipeConn: whatever a server answers on a pipelined HTTP/1.1 connection (two
// requests outstanding), each request ends with a response or an error — no panic,
// no hang — and a body is never longer than the server sent.
func FuzzPipeConn(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 206 Partial Content\r\nContent-Length: 3\r\nContent-Range: bytes 0-2/6\r\n\r\nabcHTTP/1.1 206 Partial Content\r\nContent-Length: 3\r\n\r\ndef",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"garbage\r\n\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		o := ConnOptions{}.withDefaults()
		o.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				go io.Copy(io.Discard, server) // the requests
				server.Write(answer)
			}()
			return client, nil
		}
		p := newPipeConn(o, 2)
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://origin/x", nil)
				resp, err := p.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if len(b) > len(answer) {
					t.Errorf("a body of %d bytes from an answer of %d", len(b), len(answer))
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			t.Fatalf("hung on %q", answer)
		}
	})
}

// FuzzPipeConnCancel: any answer bytes, sent in two parts, with the first of two
// pipelined requests cancelled between them (while its head or body is awaited, or
// half read): every request ends with a response or an error, never a hang, and
// every request slot comes back (a drain in the background ends too).
func FuzzPipeConnCancel(f *testing.F) {
	for _, s := range []struct {
		answer string
		split  uint16
		read   uint8
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 45, 3},
		{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 10, 0},
		{"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\nshort", 40, 1},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 50, 2},
		{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\nx", 41, 0},
		{"garbage", 3, 0},
	} {
		f.Add([]byte(s.answer), s.split, s.read)
	}
	f.Fuzz(func(t *testing.T, answer []byte, split uint16, read uint8) {
		k := min(int(split), len(answer))
		cut, written := make(chan struct{}), make(chan struct{})
		var once sync.Once
		o := ConnOptions{}.withDefaults()
		o.StallTimeout = 5 * time.Second
		o.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer server.Close()
				go func() { // the requests: the first one's arrival is told
					br := bufio.NewReader(server)
					if _, err := http.ReadRequest(br); err == nil {
						once.Do(func() { close(written) })
					}
					io.Copy(io.Discard, br)
				}()
				server.Write(answer[:k])
				<-cut
				server.Write(answer[k:])
			}()
			return client, nil
		}
		p := newPipeConn(o, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		first, cancelFirst := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // the first request: cancelled once it is written
			defer wg.Done()
			req, _ := http.NewRequestWithContext(first, http.MethodGet, "http://origin/a", nil)
			resp, err := p.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			io.ReadFull(resp.Body, make([]byte, int(read)))
			io.ReadAll(resp.Body)
		}()
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://origin/b", nil)
			resp, err := p.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			io.ReadAll(resp.Body)
		}()
		select {
		case <-written:
		case <-ctx.Done():
			t.Fatal("the first request was never written")
		}
		cancelFirst()
		close(cut)
		wg.Wait()
		if ctx.Err() != nil {
			t.Fatalf("hung on %q", answer)
		}
		p.Close()
		slotsBack, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		for range 2 { // every slot back: nothing left holding the connection
			select {
			case p.slots <- struct{}{}:
			case <-slotsBack.Done():
				t.Fatalf("a request slot was never released on %q", answer)
			}
		}
	})
}
