package load

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// OriginSockets counts the origin's side of its TCP connections on its port, by
// state, from /proc/net/tcp: connections the clients closed but the origin did not
// yet (CLOSE_WAIT) tell an origin that stopped closing from clients that dial more
// (ESTABLISHED), and the listening socket's receive queue is its accept queue — the
// connections the kernel completed that the origin has not accepted.
type OriginSockets struct {
	Established int `json:"established"`
	SynRecv     int `json:"syn_recv,omitempty"`
	CloseWait   int `json:"close_wait,omitempty"`
	Closing     int `json:"closing,omitempty"` // FIN_WAIT1/2, CLOSING, LAST_ACK
	TimeWait    int `json:"time_wait,omitempty"`
	AcceptQueue int `json:"accept_queue"`
}

// originSockets reads /proc/net/tcp and /proc/net/tcp6 for sockets whose local port
// is port (the origin's side; its clients' sockets have it as the remote port).
func originSockets(port int) (OriginSockets, bool) {
	var s OriginSockets
	ok := false
	for _, p := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		ok = true
		countSockets(f, port, &s)
		f.Close()
	}
	return s, ok
}

// countSockets adds the sockets of one /proc/net/tcp table with local port port.
func countSockets(r io.Reader, port int, s *OriginSockets) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	want := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for len(want) < 4 {
		want = "0" + want
	}
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		_, lport, ok := strings.Cut(fs[1], ":")
		if !ok || lport != want {
			continue
		}
		switch fs[3] {
		case "01":
			s.Established++
		case "03":
			s.SynRecv++
		case "04", "05", "09", "0B":
			s.Closing++
		case "06":
			s.TimeWait++
		case "08":
			s.CloseWait++
		case "0A": // LISTEN: rx_queue is the accept queue's length
			if _, rx, ok := strings.Cut(fs[4], ":"); ok {
				if n, err := strconv.ParseInt(rx, 16, 64); err == nil {
					s.AcceptQueue += int(n)
				}
			}
		}
	}
}
