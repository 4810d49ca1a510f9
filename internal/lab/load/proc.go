package load

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Servers that are not Streambed (nginx) have no /metrics: their CPU and memory come
// from /proc/PID/stat, summed over the processes named (nginx's master and workers).

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on every
// Linux architecture Go supports (sysconf(_SC_CLK_TCK) is not reachable without cgo).
const clockTicks = 100

// procSample reads CPU time and resident memory of pids; ok is false if any is gone.
func procSample(pids []int) sample {
	var s sample
	for _, pid := range pids {
		cpu, rss, err := procStat(pid)
		if err != nil {
			return sample{}
		}
		s.cpu += cpu
		s.rss += rss
	}
	s.ok = len(pids) > 0
	return s
}

// ProcStat is a process's CPU time (user + system) and resident memory, from
// /proc/PID/stat (the lab's studies read their servers with it).
func ProcStat(pid int) (cpuSeconds float64, rssBytes int64, err error) { return procStat(pid) }

// procStat parses /proc/PID/stat: fields 14 and 15 (utime, stime) and 24 (rss, pages).
func procStat(pid int) (cpuSeconds float64, rssBytes int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseProcStat(string(b))
}

func parseProcStat(s string) (cpuSeconds float64, rssBytes int64, err error) {
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc stat: no command name")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 22 {
		return 0, 0, fmt.Errorf("/proc stat: %d fields", len(f)+2)
	}
	field := func(n int) (int64, error) { return strconv.ParseInt(f[n-3], 10, 64) }
	ut, err1 := field(14)
	st, err2 := field(15)
	rss, err3 := field(24)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, fmt.Errorf("/proc stat: bad number")
	}
	return float64(ut+st) / clockTicks, rss * int64(os.Getpagesize()), nil
}

// ParsePIDs reads a comma-separated list of process IDs.
func ParsePIDs(s string) ([]int, error) {
	var pids []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--server-pids: %q is not a process ID", f)
		}
		if _, _, err := procStat(pid); err != nil {
			return nil, fmt.Errorf("--server-pids: process %d: %w", pid, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
