package mcp_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skiffhq/skiff/client"
	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/mcp"
)

// The local server (skiff mcp's tool set) adds push_directory, which
// creates the project, pushes the directory and follows the build to
// published with progress notifications, and download_artifact, which
// writes a file and will not overwrite one unless asked.
func TestLocalTools(t *testing.T) {
	onEngines(t, func(t *testing.T, e *apitest.Env) {
		go func() { _ = e.Projects.RunBuilds(t.Context(), apitest.ReadyBuilder{}) }()
		acct := e.NewAccount(t, "local")
		c := client.New(e.URL, acct.Member)
		tools, err := mcp.New(mcp.Config{Version: "test", Local: true})
		if err != nil {
			t.Fatal(err)
		}
		st, ct := sdk.NewInMemoryTransports()
		ss, err := tools.Server(mcp.Session{Client: c}).Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		pl := newProgressLog()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"},
			&sdk.ClientOptions{ProgressNotificationHandler: pl.handle}).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		tl, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tl.Tools {
			names = append(names, tool.Name)
		}
		if !slices.Contains(names, "push_directory") || !slices.Contains(names, "download_artifact") || !slices.Contains(names, "submit_job") {
			t.Errorf("local tools: got %v", names)
		}

		dir := filepath.Join(t.TempDir(), "hello")
		for name, body := range map[string]string{"Dockerfile": "FROM scratch\nCOPY runner /runner\n", "runner": "#!/bin/true\n",
			"skiff.project.json": apitest.RunnerManifest, ".dockerignore": "secret.txt\n", "secret.txt": "not for the server\n"} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		params := &sdk.CallToolParams{Name: "push_directory", Arguments: map[string]any{"dir": dir}}
		params.SetProgressToken("push-1")
		res, err := cs.CallTool(t.Context(), params)
		if err != nil || res.IsError {
			t.Fatalf("push_directory: %v %s", err, text(res))
		}
		var push struct {
			Project string `json:"project"`
			Created bool   `json:"created"`
			Push    struct {
				Status string `json:"status"`
			} `json:"push"`
		}
		decode(t, res, &push)
		if push.Project != "hello" || !push.Created || push.Push.Status != "published" {
			t.Errorf("push_directory: got %+v", push)
		}
		// The build's states come as notifications, up to published.
		pl.until(t, func(p *sdk.ProgressNotificationParams) bool { return strings.HasSuffix(p.Message, ": published") })
		// Pushing the same directory again changes nothing.
		res = call(t, cs, "push_directory", map[string]any{"dir": dir, "project": "hello"}, nil)
		if !strings.Contains(text(res), "unchanged") {
			t.Errorf("second push: %s", text(res))
		}

		art, err := c.PutArtifact(t.Context(), "data.bin", "", func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("\x00\x01binary")), nil
		}, 8)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "sub", "data.bin")
		call(t, cs, "download_artifact", map[string]any{"artifact_id": art.ID, "path": out}, nil)
		if b, err := os.ReadFile(out); err != nil || string(b) != "\x00\x01binary" {
			t.Errorf("downloaded: %q %v", b, err)
		}
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "download_artifact",
			Arguments: map[string]any{"artifact_id": art.ID, "path": out}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "overwrite") {
			t.Errorf("download over an existing file: %v %+v", err, res)
		}
		call(t, cs, "download_artifact", map[string]any{"artifact_id": art.ID, "path": out, "overwrite": true}, nil)
		// A binary artifact is a link, not inline text.
		var read struct {
			Text *string `json:"text"`
			Link string  `json:"link"`
		}
		call(t, cs, "read_artifact", map[string]any{"artifact_id": art.ID}, &read)
		if read.Text != nil || !strings.HasSuffix(read.Link, "/api/v1/artifacts/"+art.ID) {
			t.Errorf("read_artifact of a binary: got %+v", read)
		}
	})
}
