package security_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// freeComputeRunner is the attacker's runner: it works a while, keeps its
// work (a result and an output file), and then ends the way that used to be
// free: exit 137 by itself ("exit137"), or a result that declares an
// infrastructure failure and a non-zero exit ("infra").
const freeComputeRunner = `package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

func main() {
	var p struct{ Mode string ` + "`json:\"mode\"`" + ` }
	if b, err := os.ReadFile(os.Getenv("SKIFF_TASK_PAYLOAD")); err == nil {
		_ = json.Unmarshal(b, &p)
	}
	time.Sleep(2 * time.Second) // the "work"
	result := map[string]any{"answer": 42}
	if p.Mode == "infra" {
		result["failure_class"] = "infra"
	}
	b, _ := json.Marshal(result)
	_ = os.WriteFile(os.Getenv("SKIFF_TASK_RESULT"), b, 0o644)
	_ = os.WriteFile(filepath.Join(os.Getenv("SKIFF_ARTIFACT_DIR"), "work.txt"), []byte("done\n"), 0o644)
	if p.Mode == "infra" {
		os.Exit(1)
	}
	os.Exit(137)
}
`

// TestFreeComputeIsBilled is the free-compute attack of issue 28: a runner
// that does its work and then exits 137 by itself, or declares an
// infrastructure failure, used to be requeued and billed nothing for every
// attempt. Each attempt in which the runner ran is now metered (at least
// 60 s at the job's rate): the ledger charges the job for every such
// attempt and the balance drops by exactly that.
func TestFreeComputeIsBilled(t *testing.T) {
	engines(t, func(t *testing.T, engine string) {
		s := startServer(t, engine)
		c := s.account(t, "freeloader", "5")
		rec := push(t, c, "freecompute", map[string]file{
			"Dockerfile": {Body: []byte("FROM scratch\nCOPY runner /runner\n")},
			"runner":     {Body: program(t, freeComputeRunner), Mode: 0o755},
		}, 5*time.Minute)
		if rec["status"] != "published" {
			t.Fatalf("push: %v", rec)
		}
		before := freeComputeBalance(t, c)

		submit := func(mode string) apiv1.Job {
			var j apiv1.Job
			c.Post(t, "/api/v1/jobs", map[string]any{
				"project": "freecompute", "runner_command": []string{"/runner"}, "payload": map[string]any{"mode": mode},
				"max_retries": 0, "timeout_s": 120,
				"requirements": map[string]any{"cpu": 1, "memory_mb": 256},
			}).JSON(t, http.StatusCreated, &j)
			if j.ID == "" {
				t.Fatalf("submit %s: no job", mode)
			}
			return j
		}
		jobs := []apiv1.Job{submit("exit137"), submit("infra")}

		var charged apiv1.USD
		for _, j := range jobs {
			end := waitFor(t, c, "/api/v1/jobs/"+j.ID, 3*time.Minute, func(m map[string]any) bool {
				return m["status"] == "completed" || m["status"] == "failed" || m["status"] == "partial" || m["status"] == "cancelled"
			})
			if end["status"] != "failed" {
				t.Errorf("job %s: %v, want failed once its requeues ran out", j.ID, end["status"])
			}
			var sum struct {
				Estimate struct {
					RateUSDPerHour apiv1.USD `json:"rate_usd_per_hour"`
				} `json:"billing_estimate"`
			}
			if err := json.Unmarshal(j.Summary, &sum); err != nil || sum.Estimate.RateUSDPerHour <= 0 {
				t.Fatalf("job %s: no billed rate in its summary %s (%v)", j.ID, j.Summary, err)
			}
			rate := sum.Estimate.RateUSDPerHour
			perAttempt := apiv1.USD((int64(rate)*60 + 3599) / 3600) // the 60 s minimum at the job's rate, rounded up
			var tasks apiv1.TaskList
			c.Get(t, "/api/v1/jobs/"+j.ID+"/tasks").JSON(t, http.StatusOK, &tasks)
			ran, kinds := 0, map[string]int{}
			for _, tk := range tasks.Tasks {
				for _, a := range tk.Attempts {
					if a.StartedAt == nil {
						continue
					}
					ran++
					kinds[deref(a.TerminalKind)]++
					if a.BilledSeconds != 60 || a.CostUSD != perAttempt {
						t.Errorf("job %s attempt %d (%v, %v): billed %d s, %s USD; want 60 s, %s USD", j.ID,
							a.AttemptNumber, deref(a.TerminalKind), deref(a.RetryDecision), a.BilledSeconds, a.CostUSD, perAttempt)
					}
				}
			}
			// The runner's own ends, requeued outside the retry budget:
			// exit 137 reads as an OOM kill, the declared ones as such.
			if ran < 2 || kinds["oom"]+kinds["killed"]+kinds["infra_declared"] < ran-1 {
				t.Errorf("job %s: %d attempts ran, ending %v; want the first and its requeues", j.ID, ran, kinds)
			}
			want := apiv1.USD(ran) * perAttempt
			got := freeComputeCharge(t, c, j.ID)
			if got != -want {
				t.Errorf("job %s: ledger charge %s USD, want -%s USD (%d attempts ran, %s USD each)", j.ID, got, want, ran, perAttempt)
			}
			charged += want
		}
		after := freeComputeBalance(t, c)
		if after.LedgerBalanceUSD != before.LedgerBalanceUSD-charged || after.HeldUSD != 0 ||
			after.AvailableUSD != after.LedgerBalanceUSD {
			t.Errorf("balance went from %+v to %+v; want the ledger down by %s USD and nothing held", before, after, charged)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// freeComputeBalance reads the account's balance.
func freeComputeBalance(t *testing.T, c *apitest.Client) apiv1.Balance {
	t.Helper()
	var b apiv1.BalanceResponse
	c.Get(t, "/api/v1/account/balance").JSON(t, http.StatusOK, &b)
	return b.Balance
}

// freeComputeCharge sums the job_charge entries of job in the ledger.
func freeComputeCharge(t *testing.T, c *apitest.Client, jobID string) apiv1.USD {
	t.Helper()
	var page apiv1.LedgerPage
	c.Get(t, "/api/v1/account/ledger?entry_type=job_charge&limit=200").JSON(t, http.StatusOK, &page)
	var sum apiv1.USD
	for _, e := range page.Entries {
		if e.Reference == jobID {
			sum += e.AmountUSD
		}
	}
	return sum
}
