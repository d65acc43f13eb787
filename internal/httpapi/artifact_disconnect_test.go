package httpapi_test

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
)

// answered is how many requests to route the server has finished
// answering (skiff_http_requests_total, any status): the handler has
// returned, and with it whatever clean-up it does.
func answered(t *testing.T, e *apitest.Env, route string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	e.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	n := 0
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if !strings.HasPrefix(line, `skiff_http_requests_total{route="`+route+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// testArtifactDisconnect drops the client's TCP connection (a reset, as
// a killed client or a broken network leaves it) while the server is
// reading the body: nothing is kept, neither row nor file nor quota.
func testArtifactDisconnect(t *testing.T, f *fixture) {
	const route = "POST /api/v1/artifacts"
	before, done := f.state(t), answered(t, f.e, route)
	u, err := url.Parse(f.e.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// Expect: 100-continue makes the server say when the handler starts
	// reading the body, past authentication and the quota check.
	head := "POST /api/v1/artifacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + f.acct.Member +
		"\r\nX-Artifact-Filename: cut.bin\r\nContent-Type: application/octet-stream\r\nContent-Length: 8388608" +
		"\r\nExpect: 100-continue\r\n\r\n"
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(status, " 100 ") {
		t.Fatalf("waiting for 100 Continue: got %q, %v", status, err)
	}
	if _, err := conn.Write(bytes.Repeat([]byte("z"), 3<<20)); err != nil {
		t.Fatal(err)
	}
	// SO_LINGER 0: close sends a reset, not an orderly end of stream.
	if err := conn.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	deadline := time.Now().Add(30 * time.Second)
	for answered(t, f.e, route) == done {
		if time.Now().After(deadline) {
			t.Fatal("the server did not finish the dropped upload within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.unchanged(t, before, "a dropped upload")
	wantBlobs(t, f.e)
	wantQuotaUsed(t, f.member, 0)
}
