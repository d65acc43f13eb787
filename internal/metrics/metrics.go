// Package metrics is Skiff's Prometheus exposition (GET /metrics,
// docs/metrics.md): HTTP traffic measured by the API's middleware, and job
// and task figures counted from the lifecycle event feed (the same events
// the streams show), plus gauges read when scraped. Each Set has its own
// registry: no global state.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skiffhq/skiff/internal/store"
)

// Set is one server's metrics.
type Set struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	jobsAdmitted prometheus.Counter
	jobsEnded    *prometheus.CounterVec
	taskStart    prometheus.Histogram
	taskRun      *prometheus.HistogramVec
	attempts     *prometheus.CounterVec
	builds       *prometheus.CounterVec
	buildTime    *prometheus.HistogramVec
	holds        *prometheus.CounterVec
	payments     *prometheus.CounterVec

	mu       sync.Mutex
	assigned map[string]stamp // open attempts: when assigned
	started  map[string]stamp // open attempts: when their runner started
}

// stamp is when an open attempt of a job reached a step.
type stamp struct {
	at  time.Time
	job string
}

// Gauges are read when the metrics are scraped; nil ones are left out.
type Gauges struct {
	// OpenStreams is how many event streams are open.
	OpenStreams func() int
	// QueueDepth is how many tasks wait for capacity.
	QueueDepth func() (int64, error)
	// Hosts counts hosts by state.
	Hosts func() map[string]int
}

// New builds a Set with Go runtime and process collectors.
func New(g Gauges) *Set {
	s := &Set{reg: prometheus.NewRegistry(), assigned: map[string]stamp{}, started: map[string]stamp{}}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := factory{s.reg}
	s.httpRequests = f.counterVec("skiff_http_requests_total", "HTTP requests answered, by route and status.", "route", "status")
	s.httpDuration = f.histogramVec("skiff_http_request_duration_seconds",
		"Time to answer an HTTP request, by route (event streams are left out: they last until they end).",
		prometheus.DefBuckets, "route")
	s.jobsAdmitted = f.counter("skiff_jobs_admitted_total", "Jobs admitted (job.submitted events).")
	s.jobsEnded = f.counterVec("skiff_jobs_ended_total", "Jobs that reached a terminal status, by status.", "status")
	s.taskStart = f.histogram("skiff_task_start_latency_seconds",
		"Time from a task's assignment to a host to its runner's start.", prometheus.ExponentialBuckets(0.05, 2, 12))
	s.taskRun = f.histogramVec("skiff_task_run_seconds", "Run time of attempts that started, by how they ended.",
		prometheus.ExponentialBuckets(0.5, 2, 16), "outcome")
	s.attempts = f.counterVec("skiff_attempts_ended_total", "Attempts that ended, by outcome.", "outcome")
	s.builds = f.counterVec("skiff_builds_total", "Project image builds that ended, by outcome.", "outcome")
	s.buildTime = f.histogramVec("skiff_build_duration_seconds", "Duration of project image builds, by outcome.",
		prometheus.ExponentialBuckets(1, 2, 12), "outcome")
	// The metric keeps its published name; "settled" there means captured
	// (or released), the word a hold's end had before it was renamed.
	s.holds = f.counterVec("skiff_holds_settled_total", "Job holds settled, by the job's terminal status.", "status")
	s.payments = f.counterVec("skiff_payments_total", "Payment settlements, by protocol and result.", "protocol", "result")
	if g.OpenStreams != nil {
		s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skiff_open_streams",
			Help: "Event streams open on this controller."}, func() float64 { return float64(g.OpenStreams()) }))
	}
	if g.QueueDepth != nil {
		s.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skiff_queue_depth",
			Help: "Tasks queued for capacity (all controllers of the store)."}, func() float64 {
			n, err := g.QueueDepth()
			if err != nil {
				return -1
			}
			return float64(n)
		}))
	}
	if g.Hosts != nil {
		s.reg.MustRegister(&hostCollector{fn: g.Hosts, desc: prometheus.NewDesc("skiff_hosts",
			"Hosts known to this controller, by state.", []string{"state"}, nil)})
	}
	return s
}

type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

type hostCollector struct {
	fn   func() map[string]int
	desc *prometheus.Desc
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.fn() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), state)
	}
}

// Handler serves the exposition (the caller decides who may read it).
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})
}

// ObserveHTTP records one answered request; streams pass stream true and
// are counted but not timed.
func (s *Set) ObserveHTTP(route string, status int, d time.Duration, stream bool) {
	s.httpRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	if !stream {
		s.httpDuration.WithLabelValues(route).Observe(d.Seconds())
	}
}

// ObserveBuild records a build's end.
func (s *Set) ObserveBuild(outcome string, d time.Duration) {
	s.builds.WithLabelValues(outcome).Inc()
	s.buildTime.WithLabelValues(outcome).Observe(d.Seconds())
}

// ObservePayment records a settlement attempt.
func (s *Set) ObservePayment(protocol, result string) {
	s.payments.WithLabelValues(protocol, result).Inc()
}

// ObserveEvent counts one lifecycle event read from the feed. Durations
// come from the events' own times (the service's clock).
func (s *Set) ObserveEvent(e *store.JobEvent) {
	switch e.Kind {
	case "job.submitted":
		s.jobsAdmitted.Inc()
	case "job.completed", "job.partial", "job.failed", "job.cancelled":
		status := e.Kind[len("job."):]
		s.jobsEnded.WithLabelValues(status).Inc()
		s.holds.WithLabelValues(status).Inc() // a job's end captures its hold in the same transaction
		// A cancel ends attempts without events of their own: forget them.
		s.mu.Lock()
		for id, st := range s.assigned {
			if st.job == e.JobID {
				delete(s.assigned, id)
			}
		}
		for id, st := range s.started {
			if st.job == e.JobID {
				delete(s.started, id)
			}
		}
		s.mu.Unlock()
	case "attempt.assigned":
		s.mu.Lock()
		s.assigned[e.AttemptID] = stamp{e.CreatedAt, e.JobID}
		s.mu.Unlock()
	case "attempt.started":
		s.mu.Lock()
		if st, ok := s.assigned[e.AttemptID]; ok {
			s.taskStart.Observe(max(e.CreatedAt.Sub(st.at), 0).Seconds())
			delete(s.assigned, e.AttemptID)
		}
		s.started[e.AttemptID] = stamp{e.CreatedAt, e.JobID}
		s.mu.Unlock()
	case "attempt.succeeded", "attempt.failed", "attempt.retried", "attempt.infra_requeued", "attempt.lost":
		outcome := e.Kind[len("attempt."):]
		s.attempts.WithLabelValues(outcome).Inc()
		s.mu.Lock()
		if st, ok := s.started[e.AttemptID]; ok {
			s.taskRun.WithLabelValues(outcome).Observe(max(e.CreatedAt.Sub(st.at), 0).Seconds())
		}
		delete(s.started, e.AttemptID)
		delete(s.assigned, e.AttemptID)
		s.mu.Unlock()
	}
}
