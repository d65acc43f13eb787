package agenthttp_test

import (
	"testing"

	"github.com/skiffhq/skiff/internal/agent/agenthttp"
)

func TestCheckControllerURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url      string
		insecure bool
		ok       bool
	}{
		{"https://skiff.example.com", false, true},
		{"http://127.0.0.1:8080", false, true},
		{"http://localhost:8080", false, true},
		{"http://[::1]:8080", false, true},
		{"http://10.0.0.5:8080", false, false},
		{"http://skiff.example.com", false, false},
		{"http://127.0.0.1.example.com", false, false},
		{"http://10.0.0.5:8080", true, true},
		{"ftp://skiff.example.com", true, false},
		{"skiff.example.com", false, false},
	} {
		if err := agenthttp.CheckControllerURL(c.url, c.insecure); (err == nil) != c.ok {
			t.Errorf("CheckControllerURL(%q, insecure=%v) = %v, want ok=%v", c.url, c.insecure, err, c.ok)
		}
	}
}
