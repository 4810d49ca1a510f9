package load

import (
	"os"
	"strconv"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a parenthesis, as nginx's "nginx: worker process".
	line := "4242 (nginx: worker (x)) S 1 4241 4241 0 -1 4194624 120 0 0 0 250 75 0 0 20 0 1 0 100 123456789 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0"
	cpu, rss, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if cpu != 3.25 || rss != 300*int64(os.Getpagesize()) {
		t.Errorf("cpu %v s, rss %d; want 3.25 s, %d", cpu, rss, 300*os.Getpagesize())
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S 1 2", "12 (x) S 1 2 3 4 5 6 7 8 9 10 u s 13 14 15 16 17 18 19 20 r"} {
		if _, _, err := parseProcStat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestProcSampleSelf(t *testing.T) {
	pids, err := ParsePIDs(" " + strconv.Itoa(os.Getpid()) + ",")
	if err != nil || len(pids) != 1 {
		t.Fatalf("pids %v, %v", pids, err)
	}
	s := procSample(pids)
	if !s.ok || s.rss <= 0 || s.cpu < 0 {
		t.Errorf("sample %+v", s)
	}
	if _, err := ParsePIDs("0"); err == nil {
		t.Error("pid 0 accepted")
	}
	if _, err := ParsePIDs("nginx"); err == nil {
		t.Error("a name accepted as a pid")
	}
}
