package hub

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// FileCache keeps packaged segment files open, the way nginx's open_file_cache does:
// a request borrows an open descriptor, sends it with sendfile from the page cache
// and returns it, with no open, fstat or close of its own. A descriptor serves one
// request at a time (sendfile moves its offset); a file keeps up to perFile of them.
//
// Segments of a packaged asset do not change while it is served, but a file can be
// replaced on disk (packaged again, written by rename): as nginx's
// open_file_cache_valid, the path is looked at again at most every validFor, and a
// file that is no longer the one cached is dropped with its descriptors. Each answer
// is one file throughout: a descriptor is checked to be the cached file when opened,
// and one borrowed before a replacement still reads the old file whole.
type FileCache struct {
	maxOpen  int64        // descriptors the cache may hold in all
	validFor atomic.Int64 // nanoseconds between looks at a cached path
	open     atomic.Int64
	m        sync.Map // path → *CachedFile
}

// ErrReplaced says the file at a cached path is no longer the one cached: Get it
// again.
var ErrReplaced = errors.New("file replaced on disk since it was cached")

// revalidateEvery is how often a cached path is looked at again (open_file_cache_valid).
const revalidateEvery = time.Second

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

	idle    chan *os.File
	cache   *FileCache
	info    os.FileInfo  // what Path named when cached: new descriptors must be it
	checked atomic.Int64 // when Path was last looked at (Unix ns); 0: look now
	retired atomic.Bool  // replaced in the cache: descriptors close when returned
}

// NewFileCache returns a cache that holds at most maxOpen descriptors (0 disables it).
func NewFileCache(maxOpen int) *FileCache {
	c := &FileCache{maxOpen: int64(maxOpen)}
	c.validFor.Store(int64(revalidateEvery))
	return c
}

// SetValidFor sets how often a cached path is looked at again (1 s by default; 0:
// at every Get).
func (c *FileCache) SetValidFor(d time.Duration) { c.validFor.Store(int64(d)) }

// Get returns the file at path with its validators, loaded once and looked at again
// at most every validFor.
func (c *FileCache) Get(path string) (*CachedFile, error) { return c.GetAt(path, time.Now()) }

// GetAt is Get with the time now given: a server that has read the clock for the
// request already (an event loop's batch time) saves reading it again.
func (c *FileCache) GetAt(path string, at time.Time) (*CachedFile, error) {
	if c != nil {
		if v, ok := c.m.Load(path); ok {
			f := v.(*CachedFile)
			now := at.UnixNano()
			last := f.checked.Load()
			// validFor 0 looks at every request, also when at is a little older than
			// the last look (a batch time read before another request's clock).
			if vf := c.validFor.Load(); (vf > 0 && now-last < vf) || !f.checked.CompareAndSwap(last, now) {
				return f, nil // looked at lately, or being looked at by another request
			}
			fi, err := os.Stat(path)
			if err == nil && sameFile(f.info, fi) {
				return f, nil
			}
			c.retire(path, f)
			if err != nil {
				return nil, err
			}
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f := &CachedFile{Path: path, Size: fi.Size(), ModTime: fi.ModTime(),
		ETag: fmt.Sprintf(`"%x-%x"`, fi.ModTime().Unix(), fi.Size()), idle: make(chan *os.File, perFile), cache: c, info: fi}
	f.checked.Store(time.Now().UnixNano())
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
	return f.openNew()
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
	return f.openNew()
}

// openNew opens Path, which must still be the cached file (ErrReplaced if not: its
// size and validators would not describe the bytes).
func (f *CachedFile) openNew() (*os.File, error) {
	fd, err := os.Open(f.Path)
	if err != nil {
		return nil, err
	}
	if fi, err := fd.Stat(); err != nil || !sameFile(f.info, fi) {
		fd.Close()
		f.checked.Store(0) // the next Get looks at the path at once
		return nil, fmt.Errorf("%s: %w", f.Path, ErrReplaced)
	}
	if f.cache != nil {
		f.cache.open.Add(1)
	}
	return fd, nil
}

// sameFile reports whether b is still the file a describes, unchanged.
func sameFile(a, b os.FileInfo) bool {
	return a != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// retire drops f from the cache and closes its idle descriptors; borrowed ones close
// when returned.
func (c *FileCache) retire(path string, f *CachedFile) {
	c.m.CompareAndDelete(path, f)
	f.retired.Store(true)
	f.dropIdle()
}

func (f *CachedFile) dropIdle() {
	for {
		select {
		case fd := <-f.idle:
			f.drop(fd)
		default:
			return
		}
	}
}

// Release returns a borrowed descriptor, or closes it when the file or the cache
// holds enough already.
func (f *CachedFile) Release(fd *os.File) {
	if f.cache != nil && f.cache.open.Load() <= f.cache.maxOpen && !f.retired.Load() {
		select {
		case f.idle <- fd:
			if f.retired.Load() {
				f.dropIdle() // retired meanwhile: its drain may have missed this one
			}
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
