package fdsp

import "github.com/prometheus/client_golang/prometheus"

// collectors expose the server's counters on /metrics.
func (s *Server) collectors() []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "streambed_fdsp_" + name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "streambed_fdsp_" + name, Help: help}, f)
	}
	return []prometheus.Collector{
		gauge("sessions", "FDSP sessions kept (connected or waiting for a resume).", func() float64 { return float64(s.Sessions()) }),
		gauge("active_sessions", "FDSP sessions with a TCP connection now.", func() float64 { return float64(s.Active.Load()) }),
		counter("bound_total", "FDSP sessions whose UDP peer was bound.", func() float64 { return float64(s.Bound.Load()) }),
		counter("rejected_datagrams_total", "Datagrams refused: malformed, unknown token, or not the session's address.", func() float64 { return float64(s.Rejected.Load()) }),
		counter("tcp_bytes_total", "Bytes written on FDSP TCP connections.", func() float64 { return float64(s.TCPBytes.Load()) }),
		counter("udp_bytes_total", "Bytes of RTP datagrams sent.", func() float64 { return float64(s.UDPBytes.Load()) }),
		counter("udp_packets_total", "RTP datagrams sent.", func() float64 { return float64(s.UDPPacket.Load()) }),
		counter("resent_packets_total", "RTP datagrams sent again on a client's NACK.", func() float64 { return float64(s.Resent.Load()) }),
		counter("repair_ignored_total", "NACKed packets (or malformed NACK frames) not resent: unknown, expired, not yet sent, or another session's.", func() float64 { return float64(s.RepairIgnored.Load()) }),
		counter("repair_over_budget_total", "NACKed packets not resent: the session's repair budget was spent.", func() float64 { return float64(s.RepairOverBudget.Load()) }),
	}
}
