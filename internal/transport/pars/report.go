package pars

import (
	"math"

	"github.com/streambed/streambed/internal/player/qoe"
)

// AddToReport adds the connections and, with auto, the model's estimate of C and M
// to a QoE report (the `connections`, `capacity_kbps`, `competing_flows` and
// `estimator_note` keys of `streambed play --json`).
func (c *Client) AddToReport(rep *qoe.Report) {
	n := c.Connections()
	rep.Connections = &n
	est, ok := c.Estimate()
	if !ok {
		return
	}
	rep.EstimatorNote = est.Reason
	if est.Valid {
		capKbps := math.Round(est.Capacity/1000*10) / 10
		m := math.Round(est.Competing*100) / 100
		rep.CapacityKbps, rep.CompetingFlows = &capKbps, &m
	}
}

// AddToReport adds the number of connections to a QoE report.
func (p *Parallel) AddToReport(rep *qoe.Report) {
	n := p.n
	rep.Connections = &n
}
