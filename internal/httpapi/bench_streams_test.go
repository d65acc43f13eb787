package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/id"
	"github.com/skiffhq/skiff/internal/store"
)

// BenchmarkWatchStreams holds 1,000 watch streams open on one controller
// (SQLite, loopback HTTP), each watching its own job, and then starts every
// watched job (a claim: job.running, attempt.assigned; 500 a second) while
// more jobs are submitted over HTTP. It reports the delivery latency of each job frame
// from the start of the transaction that committed the change to the
// frame's arrival at its client (p50_ms, p99_ms, max_ms); the heap held per
// open stream (heap_KiB_per_stream: server and client side together, both
// in this process); and the median submission time while 1,000 jobs start
// at the same pace, first with no stream open, then with the 1,000 streams
// (submit_ms_idle, submit_ms_loaded, submit_slowdown_pct); the baseline is
// taken before the streams open and again after they close. It runs on SQLite,
// and on PostgreSQL too when SKIFF_TEST_POSTGRES_URL is set.
// docs/streams.md has the figures.
//
//	go test -run '^$' -bench WatchStreams -benchtime 1x ./internal/httpapi/
func BenchmarkWatchStreams(b *testing.B) {
	for _, eng := range apitest.Engines() {
		b.Run(eng.Name, func(b *testing.B) {
			if eng.Skip != "" {
				b.Skip(eng.Skip)
			}
			benchWatchStreams(b, eng)
		})
	}
}

func benchWatchStreams(b *testing.B, eng apitest.Engine) {
	const streams, submissions = 1000, 300
	const claimGap = 2 * time.Millisecond // 500 job starts a second
	for range b.N {
		e := apitest.Start(b, apitest.Options{Store: eng.Open(b), Streams: httpapi.StreamConfig{PerAccount: 2 * streams}})
		acct, _ := fundedAccount(b, e, "acme", fixtureProject, 10_000_000_000)
		c := &apitest.Client{BaseURL: e.URL, Token: acct.Member}
		submit := func(priority string) (string, time.Duration) {
			start := time.Now()
			r := c.Post(b, "/api/v1/jobs", map[string]any{"project": fixtureProject, "runner_command": []string{"/r"},
				"priority": priority, "timeout_s": 600})
			d := time.Since(start)
			var j struct{ ID string }
			if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &j) != nil {
				b.Fatalf("submit: %d %s", r.Status, r.Body)
			}
			return j.ID, d
		}
		median := func(ds []time.Duration) float64 {
			slices.Sort(ds)
			return float64(ds[len(ds)/2].Microseconds()) / 1000
		}
		// Start every job of a set, one claim every claimGap (the
		// service's pace while jobs run), recording when each began.
		run := func(n int, started map[string]time.Time) *sync.WaitGroup {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					t0 := time.Now()
					task, _, err := e.Jobs.Claim(b.Context(), &store.TaskClaimParams{HostID: "wkr_bench", AttemptID: id.New(id.Attempt),
						ResourceProfile: json.RawMessage(`{}`), FreeCPU: 64, FreeMemoryMB: 1 << 20, Now: e.Clock.Now()})
					if err != nil {
						b.Errorf("claim: %v", err)
						return
					}
					if started != nil {
						started[task.JobID] = t0
					}
					time.Sleep(claimGap)
				}
			}()
			return &wg
		}
		measure := func() []time.Duration {
			var ds []time.Duration
			for range submissions {
				_, d := submit("low") // low: the claims pass over them
				ds = append(ds, d)
			}
			return ds
		}
		// The baseline: jobs start while jobs are submitted, no stream open.
		for range streams {
			submit("high") // claimed first
		}
		wg := run(streams, nil)
		idle := measure()
		wg.Wait()
		jobs := make([]string, streams)
		index := map[string]int{}
		for i := range jobs {
			jobs[i], _ = submit("normal")
			index[jobs[i]] = i
		}

		streamsCtx, closeStreams := context.WithCancel(b.Context())
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		arrived := make([]time.Time, streams)
		var ready, got sync.WaitGroup
		ready.Add(streams)
		got.Add(streams)
		for i, jobID := range jobs {
			req, _ := http.NewRequestWithContext(streamsCtx, http.MethodGet, e.URL+"/api/v1/jobs/watch?ids="+jobID, nil)
			req.Header.Set("Authorization", "Bearer "+acct.Member)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("stream %d: %v %v", i, err, resp)
			}
			go func() {
				defer resp.Body.Close()
				r := bufio.NewReader(resp.Body)
				snap, frame := false, false
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch {
					case strings.HasPrefix(line, "event: snapshot"):
						snap = true
						ready.Done()
					case snap && !frame && strings.HasPrefix(line, "event: job"):
						arrived[i], frame = time.Now(), true
						got.Done()
					}
				}
			}()
		}
		ready.Wait()
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)

		// The same with every job watched.
		startedAt := map[string]time.Time{}
		wg = run(streams, startedAt)
		loaded := measure()
		wg.Wait()
		// The baseline again, the streams closed: the machine's drift
		// over the run falls on both sides.
		closeStreams()
		for e.Broker.Count() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		for range streams {
			submit("high")
		}
		wg = run(streams, nil)
		idle = append(idle, measure()...)
		wg.Wait()
		got.Wait()
		started := make([]time.Time, streams)
		for jobID, t0 := range startedAt {
			started[index[jobID]] = t0
		}

		lat := make([]time.Duration, streams)
		for i := range lat {
			lat[i] = arrived[i].Sub(started[i])
		}
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
		b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
		b.ReportMetric(ms(lat[len(lat)-1]), "max_ms")
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/streams/1024, "heap_KiB_per_stream")
		b.ReportMetric(median(idle), "submit_ms_idle")
		b.ReportMetric(median(loaded), "submit_ms_loaded")
		b.ReportMetric(100*(median(loaded)-median(idle))/median(idle), "submit_slowdown_pct")
	}
}
