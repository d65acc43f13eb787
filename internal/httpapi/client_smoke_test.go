package httpapi_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/httpapi/apitest"
	"github.com/skiffhq/skiff/internal/testenv"
)

// A TypeScript client generated from openapi/openapi.json (openapi-typescript,
// openapi-fetch) type-checks against the document and drives a real server:
// create a project, push, submit, read the result (test/openapi/smoke.ts).
func TestGeneratedClientSmoke(t *testing.T) {
	t.Parallel()
	dir := testenv.NodeProject(t)
	e := apitest.Start(t, apitest.Options{})
	acct := e.NewAccount(t, "smoke")
	grant(t, e, acct.ID, 50_000_000)
	go func() { _ = e.Projects.RunBuilds(t.Context(), readyBuilder{}) }()

	gen := t.TempDir()
	node := func(name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), filepath.Join(dir, "node_modules", ".bin", name), args...)
		cmd.Dir = gen
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	for name, data := range map[string]string{
		"package.json":  `{"type": "module"}`,
		"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2022", "module": "nodenext", "moduleResolution": "nodenext", "outDir": "out", "skipLibCheck": true, "lib": ["es2022", "dom"], "types": ["node"]}, "files": ["smoke.ts"]}`,
	} {
		writeFile(t, filepath.Join(gen, name), []byte(data))
	}
	src, err := os.ReadFile(filepath.Join(dir, "smoke.ts"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(gen, "smoke.ts"), src)
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(gen, "node_modules")); err != nil {
		t.Fatal(err)
	}
	doc, err := filepath.Abs("../../openapi/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	// Fields with a default are optional in a request: the server fills them.
	node("openapi-typescript", doc, "--default-non-nullable=false", "-o", filepath.Join(gen, "schema.ts"))
	node("tsc", "-p", gen)

	tarball := filepath.Join(gen, "project.tgz")
	writeFile(t, tarball, projectTarball(t, map[string]string{
		"Dockerfile":         "FROM scratch\nCOPY runner /runner\n",
		"skiff.project.json": `{"version": 1, "runtime": {"kind": "oci", "sandbox": "gvisor", "workdir": "/"}, "entrypoint": {"command": ["/runner"]}}`,
		"runner":             "#!/runner\n",
	}))
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(gen, "out", "smoke.js"))
	cmd.Env = append(os.Environ(), "SKIFF_URL="+e.URL, "SKIFF_TOKEN="+acct.Member, "SKIFF_TARBALL="+tarball)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.HasSuffix(bytes.TrimSpace(out), []byte("ok")) {
		t.Fatalf("generated client smoke test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func projectTarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
