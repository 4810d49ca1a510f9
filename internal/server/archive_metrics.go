package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/streambed/streambed/internal/hub"
)

// archiveCollector reports each archived channel's archive: what it wrote, what it
// lost, what it pruned, and whether its disk is full (new media refused).
type archiveCollector struct{ hub *hub.Hub }

var (
	archiveWrittenDesc = prometheus.NewDesc("streambed_archive_segments_written_total",
		"Segments written to the channel's archive.", []string{"channel"}, nil)
	archiveFailedDesc = prometheus.NewDesc("streambed_archive_failures_total",
		"Archive writes that failed or were dropped (a full disk, a slow disk).", []string{"channel"}, nil)
	archivePrunedDesc = prometheus.NewDesc("streambed_archive_groups_pruned_total",
		"Archive groups removed for being older than archive_length.", []string{"channel"}, nil)
	archiveFullDesc = prometheus.NewDesc("streambed_archive_disk_full",
		"1 while the channel's archive disk is full and new media is refused (507).", []string{"channel"}, nil)
)

func (a archiveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- archiveWrittenDesc
	ch <- archiveFailedDesc
	ch <- archivePrunedDesc
	ch <- archiveFullDesc
}

func (a archiveCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range a.hub.Channels() {
		st, ok := c.Archive()
		if !ok {
			continue
		}
		name := c.Info().Name
		full := 0.0
		if st.Full {
			full = 1
		}
		ch <- prometheus.MustNewConstMetric(archiveWrittenDesc, prometheus.CounterValue, float64(st.Written), name)
		ch <- prometheus.MustNewConstMetric(archiveFailedDesc, prometheus.CounterValue, float64(st.Failed), name)
		ch <- prometheus.MustNewConstMetric(archivePrunedDesc, prometheus.CounterValue, float64(st.Pruned), name)
		ch <- prometheus.MustNewConstMetric(archiveFullDesc, prometheus.GaugeValue, full, name)
	}
}
