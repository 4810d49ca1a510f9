package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// parts reads a body to its end: the headers and chunks, and the error that ended it
// (nil at a clean end).
func parts(b []byte, lim Limits, prior *Header) (hdrs []*Header, chunks []*Chunk, err error) {
	p := NewParser(bytes.NewReader(b), lim, prior)
	for {
		h, c, err := p.Next()
		if err == io.EOF {
			return hdrs, chunks, nil
		}
		if err != nil {
			return hdrs, chunks, err
		}
		if h != nil {
			hdrs = append(hdrs, h)
		} else {
			chunks = append(chunks, c)
		}
	}
}

func TestParserReadsHeaderAndChunks(t *testing.T) {
	wall := time.Date(2025, 5, 1, 10, 0, 0, 250e6, time.UTC)
	header := videoHeader(t, 900_000)
	c0, c1, c2 := videoChunk(t, 0, 25, true), videoChunk(t, 25, 25, false), videoChunk(t, 50, 50, true)
	body := concat(
		header[:ftypLen(header)], box("free", []byte("between ftyp and moov")), header[ftypLen(header):], // ftyp, free, moov
		styp(false), prft(wall, 0), c0,
		box("free", []byte("dropped")), c1,
		styp(true), box("emsg", make([]byte, 20)), c2,
		box("mfra", make([]byte, 8)),
	)
	hdrs, chunks, err := parts(body, Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hdrs) != 1 || !bytes.Equal(hdrs[0].Bytes, header) {
		t.Fatalf("header: %d parsed, want the ftyp and moov without the free box", len(hdrs))
	}
	h := hdrs[0]
	if in := h.Init.Info; in.Kind != media.Video || in.Codec != "avc1.42c00d" || in.Width != 320 || in.Height != 180 || in.Timescale != videoTimescale || h.Bitrate != 900_000 {
		t.Errorf("header info %+v, bitrate %d", in, h.Bitrate)
	}
	if len(chunks) != 3 {
		t.Fatalf("%d chunks, want 3", len(chunks))
	}
	want := []struct {
		data       []byte
		start, dur uint64
		key        bool
		styp, last bool
	}{
		{concat(styp(false), prft(wall, 0), c0), 0, 25 * frameTicks, true, true, false},
		{c1, 25 * frameTicks, 25 * frameTicks, false, false, false},
		{concat(styp(true), box("emsg", make([]byte, 20)), c2), 50 * frameTicks, 50 * frameTicks, true, true, true},
	}
	for i, w := range want {
		c := chunks[i]
		if !bytes.Equal(c.Data, w.data) || c.Fragment.BaseMediaDecodeTime != w.start || c.Fragment.Duration() != w.dur ||
			c.Fragment.Keyframe() != w.key || c.Styp != w.styp || c.Last != w.last {
			t.Errorf("chunk %d: %d bytes (want %d), start %d, dur %d, key %v, styp %v, last %v; want %+v",
				i, len(c.Data), len(w.data), c.Fragment.BaseMediaDecodeTime, c.Fragment.Duration(), c.Fragment.Keyframe(), c.Styp, c.Last, w)
		}
	}
	if p := chunks[0].Prft; p == nil || !p.Wallclock.Equal(wall) || p.MediaTime != 0 || p.TrackID != 1 {
		t.Errorf("prft %+v, want %v", p, wall)
	}
}

func TestParserLargeSizeAndPriorHeader(t *testing.T) {
	h, err := parseHeader(audioHeader(t))
	if err != nil {
		t.Fatal(err)
	}
	c := audioChunk(t, 0, 10)
	// The same chunk with its mdat in a 64-bit size header.
	moofLen := int(binary.BigEndian.Uint32(c))
	mdat := c[moofLen:]
	big := append(binary.BigEndian.AppendUint32(nil, 1), "mdat"...)
	big = binary.BigEndian.AppendUint64(big, uint64(len(mdat)+8))
	big = append(big, mdat[8:]...)
	moof := append([]byte(nil), c[:moofLen]...)
	// The trun's data offset counts from the moof: the mdat header grew by 8.
	patchDataOffset(t, moof, 8)
	_, chunks, err := parts(concat(moof, big), Limits{}, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 1 || chunks[0].Fragment.Duration() != 10*aacFrame || len(chunks[0].Data) != len(c)+8 {
		t.Fatalf("chunks %d, want 1 of 10 frames", len(chunks))
	}
}

// ftypLen is the size of the ftyp box that begins a header.
func ftypLen(header []byte) int { return int(binary.BigEndian.Uint32(header)) }

// patchDataOffset adds delta to the data offset of the trun in a moof written by
// cmaf.AppendFragment (mfhd, traf with tfhd, tfdt v1, trun with a data offset).
func patchDataOffset(t *testing.T, moof []byte, delta uint32) {
	t.Helper()
	i := bytes.Index(moof, []byte("trun"))
	if i < 0 {
		t.Fatal("no trun")
	}
	off := i + 4 + 4 + 4 // type, version+flags, sample count
	binary.BigEndian.PutUint32(moof[off:], binary.BigEndian.Uint32(moof[off:])+delta)
}

func TestParserErrors(t *testing.T) {
	header := videoHeader(t, 0)
	chunk := videoChunk(t, 0, 50, true)
	badMoov := concat(header[:ftypLen(header)], box("moov", box("mvhd", make([]byte, 20))))
	tests := []struct {
		name  string
		body  []byte
		lim   Limits
		want  error
		also  error
		whole int // chunks that arrived before the error
	}{
		{"media before the header", concat(chunk), Limits{}, ErrNoHeader, nil, 0},
		{"styp before the header", concat(styp(false), chunk), Limits{}, ErrNoHeader, nil, 0},
		{"moov without ftyp", header[ftypLen(header):], Limits{}, ErrNoHeader, nil, 0},
		{"unparsable moov", badMoov, Limits{}, ErrNoHeader, nil, 0},
		{"moof in the header", concat(header[:ftypLen(header)], chunk), Limits{}, ErrNoHeader, nil, 0},
		{"garbage", []byte("hello, this is not a CMAF stream at all\n"), Limits{}, media.ErrInvalidMedia, nil, 0},
		{"box smaller than its header", concat(header, []byte{0, 0, 0, 4, 'm', 'o', 'o', 'f'}), Limits{}, media.ErrInvalidMedia, nil, 0},
		{"size 0", concat(header, []byte{0, 0, 0, 0, 'm', 'd', 'a', 't'}), Limits{}, media.ErrInvalidMedia, nil, 0},
		{"mdat without moof", concat(header, chunk[binary.BigEndian.Uint32(chunk):]), Limits{}, media.ErrInvalidMedia, nil, 0},
		{"moof without mdat", concat(header, chunk[:binary.BigEndian.Uint32(chunk)], styp(false)), Limits{}, media.ErrInvalidMedia, nil, 0},
		{"truncated mdat", concat(header, chunk, chunk[:len(chunk)-10]), Limits{}, media.ErrInvalidMedia, io.ErrUnexpectedEOF, 1},
		{"truncated header", concat(header, chunk[:5]), Limits{}, media.ErrInvalidMedia, io.ErrUnexpectedEOF, 0},
		{"box over the limit", concat(header, chunk), Limits{MaxBox: 2000}, ErrTooLarge, nil, 0},
		{"request over the limit", concat(header, chunk, chunk), Limits{MaxRequest: int64(len(header) + len(chunk) + 100)}, ErrTooLarge, nil, 1},
		{"styp after prft", concat(header, prft(time.Now(), 0), styp(false), chunk), Limits{}, media.ErrInvalidMedia, nil, 0},
		{"short styp", concat(header, box("styp", []byte("ab")), chunk), Limits{}, media.ErrInvalidMedia, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, chunks, err := parts(tc.body, tc.lim, nil)
			if !errors.Is(err, tc.want) || tc.also != nil && !errors.Is(err, tc.also) {
				t.Errorf("err %v, want %v %v", err, tc.want, tc.also)
			}
			if len(chunks) != tc.whole {
				t.Errorf("%d chunks before the error, want %d", len(chunks), tc.whole)
			}
			if err != nil && statusOf(err) == 500 {
				t.Errorf("status 500 for %v", err)
			}
		})
	}
}

// TestParserStreams checks a chunk is handed over as soon as its mdat is complete,
// while the body is still open.
func TestParserStreams(t *testing.T) {
	pr, pw := io.Pipe()
	p := NewParser(pr, Limits{}, nil)
	go func() {
		_, _ = pw.Write(videoHeader(t, 0))
		_, _ = pw.Write(videoChunk(t, 0, 50, true))
		// and then nothing more until the test reads the chunk
	}()
	if h, _, err := p.Next(); err != nil || h == nil {
		t.Fatalf("header: %v", err)
	}
	done := make(chan *Chunk)
	go func() {
		_, c, _ := p.Next()
		done <- c
	}()
	select {
	case c := <-done:
		if c == nil || c.Fragment.Duration() != 50*frameTicks {
			t.Fatalf("chunk %+v", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the chunk was not handed over while the body stayed open")
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	if _, _, err := p.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("after the writer vanished: %v", err)
	}
}

// FuzzParser feeds arbitrary bodies to the parser: it must never panic, never return
// a chunk whose bytes exceed the limits, and fail with one of its error kinds.
func FuzzParser(f *testing.F) {
	header := videoHeader(f, 500_000)
	f.Add(concat(header, styp(false), prft(time.Unix(1.7e9, 0), 0), videoChunk(f, 0, 5, true), videoChunk(f, 5, 5, false), styp(true), videoChunk(f, 10, 3, true)))
	f.Add(concat(audioHeader(f), audioChunk(f, 0, 3), box("free"), audioChunk(f, 3, 3), box("mfra", make([]byte, 8))))
	f.Add(concat(header[:ftypLen(header)], box("free", []byte("x")), header[ftypLen(header):]))
	f.Add(videoChunk(f, 0, 2, true))
	f.Add([]byte("garbage that is not a box"))
	f.Add([]byte{0, 0, 0, 1, 'm', 'd', 'a', 't', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	lim := Limits{MaxBox: 1 << 16, MaxRequest: 1 << 20}
	f.Fuzz(func(t *testing.T, body []byte) {
		p := NewParser(bytes.NewReader(body), lim, nil)
		for {
			h, c, err := p.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if !errors.Is(err, media.ErrInvalidMedia) && !errors.Is(err, ErrNoHeader) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("error of no known kind: %v", err)
				}
				return
			}
			if h != nil && (h.Init == nil || int64(len(h.Bytes)) > lim.MaxBox) {
				t.Fatalf("header of %d bytes", len(h.Bytes))
			}
			if c != nil && int64(len(c.Data)) > 3*lim.MaxBox {
				t.Fatalf("chunk of %d bytes", len(c.Data))
			}
		}
	})
}

// A body that stops (the request was stopped, the client went away) where one box
// ended says so, so the origin can tell an encoder that hung up after its last
// fragment from one cut inside a box.
func TestBoxReaderStopsBetweenOrInsideBoxes(t *testing.T) {
	stop := errors.New("stopped")
	box := []byte{0, 0, 0, 8, 'f', 'r', 'e', 'e'}
	for _, tc := range []struct {
		name    string
		body    []byte
		between bool
	}{
		{"after a whole box", box, true},
		{"inside a box header", append(append([]byte{}, box...), 0, 0, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := NewBoxReader(io.MultiReader(bytes.NewReader(tc.body), errReader{stop}), Limits{})
			h, err := br.Next()
			if err != nil || h.Type != "free" {
				t.Fatalf("first box: %v %v", h.Type, err)
			}
			if err := br.Skip(h); err != nil {
				t.Fatal(err)
			}
			_, err = br.Next()
			if !errors.Is(err, stop) || errors.Is(err, errBetweenBoxes) != tc.between {
				t.Errorf("err %v: between boxes %v, want %v", err, errors.Is(err, errBetweenBoxes), tc.between)
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
