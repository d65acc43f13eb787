package agenthttp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skiffhq/skiff/internal/agent/agenthttp"
	"github.com/skiffhq/skiff/internal/agentproto"
)

// A host given several controllers moves to the next when one does not
// answer, and stays with one that answers, even with an error status.
func TestFailoverMovesPastADeadController(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close() // nothing listens there now: connection refused

	calls := 0
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.Header.Get("Authorization") != "Bearer skh_test" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(agentproto.RegisterResponse{ProtocolVersion: agentproto.ProtocolVersion, HostID: "wkr_a"})
	}))
	defer live.Close()

	f := agenthttp.NewFailover([]string{deadURL, live.URL}, "skh_test")
	req := &agentproto.RegisterRequest{ProtocolVersion: agentproto.ProtocolVersion}
	if _, err := f.Register(context.Background(), req); err == nil {
		t.Fatal("register with the dead controller first succeeded")
	}
	for range 3 {
		resp, err := f.Register(context.Background(), req)
		if err != nil || resp.HostID != "wkr_a" {
			t.Fatalf("register after failover: %+v, %v", resp, err)
		}
	}
	if calls != 3 {
		t.Errorf("the live controller got %d calls, want 3 (it stays in use)", calls)
	}
}
