package hub

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// FileCache keeps packaged segment files open, the way nginx's open_file_cache does:
// a request borrows an open descriptor, sends it with sendfile from the page cache
// and returns it, with no open, fstat or close of its own. Segments of a packaged
// asset never change, so there is nothing to invalidate. A descriptor serves one
// request at a time (sendfile moves its offset); a file keeps up to perFile of them.
type FileCache struct {
	maxOpen int64 // descriptors the cache may hold in all
	open    atomic.Int64
	m       sync.Map // path → *CachedFile
}

// httpDate is HTTP's date format (net/http.TimeFormat), kept here so the hub does
// not import net/http.
const httpDate = "Mon, 02 Jan 2006 15:04:05 GMT"

// perFile is how many idle descriptors a file keeps for concurrent requests.
const perFile = 8

// CachedFile is an open segment file with the validators HTTP needs.
type CachedFile struct {
	Path    string
	Size    int64
	ModTime time.Time
	ETag    string
	// The header values of a whole-file answer (ETag, Last-Modified as an HTTP
	// date, Content-Length), formatted once rather than per request. Shared: a
	// caller puts them in a header map and never changes them in place.
	ETagValue, LastModifiedValue, LengthValue []string

	idle  chan *os.File
	cache *FileCache
}

// NewFileCache returns a cache that holds at most maxOpen descriptors (0 disables it).
func NewFileCache(maxOpen int) *FileCache { return &FileCache{maxOpen: int64(maxOpen)} }

// Get returns the file at path with its validators, loading them once.
func (c *FileCache) Get(path string) (*CachedFile, error) {
	if c != nil {
		if v, ok := c.m.Load(path); ok {
			return v.(*CachedFile), nil
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f := &CachedFile{Path: path, Size: fi.Size(), ModTime: fi.ModTime(),
		ETag: fmt.Sprintf(`"%x-%x"`, fi.ModTime().Unix(), fi.Size()), idle: make(chan *os.File, perFile), cache: c}
	f.ETagValue = []string{f.ETag}
	f.LastModifiedValue = []string{f.ModTime.UTC().Format(httpDate)}
	f.LengthValue = []string{strconv.FormatInt(f.Size, 10)}
	if c == nil {
		return f, nil
	}
	v, _ := c.m.LoadOrStore(path, f)
	return v.(*CachedFile), nil
}

// Open borrows a descriptor positioned at the start; give it back with Release.
func (f *CachedFile) Open() (*os.File, error) {
	select {
	case fd := <-f.idle:
		if _, err := fd.Seek(0, 0); err == nil {
			return fd, nil
		}
		f.drop(fd)
	default:
	}
	fd, err := os.Open(f.Path)
	if err == nil && f.cache != nil {
		f.cache.open.Add(1)
	}
	return fd, err
}

// OpenAt borrows a descriptor for reads at explicit offsets (sendfile or pread
// with an offset), which do not use or move its position: no seek. Give it back
// with Release.
func (f *CachedFile) OpenAt() (*os.File, error) {
	select {
	case fd := <-f.idle:
		return fd, nil
	default:
	}
	fd, err := os.Open(f.Path)
	if err == nil && f.cache != nil {
		f.cache.open.Add(1)
	}
	return fd, err
}

// Release returns a borrowed descriptor, or closes it when the file or the cache
// holds enough already.
func (f *CachedFile) Release(fd *os.File) {
	if f.cache != nil && f.cache.open.Load() <= f.cache.maxOpen {
		select {
		case f.idle <- fd:
			return
		default:
		}
	}
	f.drop(fd)
}

func (f *CachedFile) drop(fd *os.File) {
	fd.Close()
	if f.cache != nil {
		f.cache.open.Add(-1)
	}
}

// Open counts the descriptors the cache holds, idle or borrowed.
func (c *FileCache) Open() int64 { return c.open.Load() }
