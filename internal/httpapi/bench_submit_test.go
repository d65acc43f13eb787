package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// BenchmarkSubmit is POST /api/v1/jobs of a one-task job through the real
// server on SQLite, from parallel clients of one account: the admission
// path's CPU (run with -cpuprofile to see where it goes).
func BenchmarkSubmit(b *testing.B) {
	e := apitest.Start(b, apitest.Options{})
	acct, _ := fundedAccount(b, e, "bench", "p", 1_000_000_000_000)
	body := []byte(`{"project":"p","runner_command":["/runner"],"payload":{"n":1},"timeout_s":60}`)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", e.URL+"/api/v1/jobs", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+acct.Member)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}
