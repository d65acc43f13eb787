package agent

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// layoutTar is a tar of an OCI layout holding blobs (by name), plus extra
// entries; it returns the stream and each blob's hex digest.
func layoutTar(t *testing.T, blobs map[string]string, extra ...tar.Header) ([]byte, map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h tar.Header, body string) {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			body = ""
		}
		h.Size = int64(len(body))
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	add(tar.Header{Name: "oci-layout"}, `{"imageLayoutVersion":"1.0.0"}`)
	add(tar.Header{Name: "index.json"}, `{}`)
	digests := map[string]string{}
	for name, body := range blobs {
		sum := sha256.Sum256([]byte(body))
		d := hex.EncodeToString(sum[:])
		digests[name] = d
		add(tar.Header{Name: "blobs/sha256/" + d}, body)
	}
	for _, h := range extra {
		add(h, "x")
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), digests
}

func TestExtractLayout(t *testing.T) {
	t.Parallel()
	good, d := layoutTar(t, map[string]string{"manifest": `{"layers":[]}`, "layer": "bytes of a layer"})
	if n, err := extractLayout(bytes.NewReader(good), t.TempDir(), "sha256:"+d["manifest"]); err != nil || n == 0 {
		t.Fatalf("a good layout: %d bytes, %v", n, err)
	}

	// A blob whose content is not its name: tampered or corrupted.
	tampered := bytes.Replace(good, []byte("bytes of a layer"), []byte("bytes of a LAYER"), 1)
	if _, err := extractLayout(bytes.NewReader(tampered), t.TempDir(), "sha256:"+d["manifest"]); err == nil || !strings.Contains(err.Error(), "tampered") {
		t.Errorf("a tampered blob: %v, want refused", err)
	}
	// Cut short.
	if _, err := extractLayout(bytes.NewReader(good[:len(good)/2]), t.TempDir(), "sha256:"+d["manifest"]); err == nil {
		t.Error("a truncated stream was accepted")
	}
	// Not the image asked for.
	other := strings.Repeat("a", 64)
	if _, err := extractLayout(bytes.NewReader(good), t.TempDir(), "sha256:"+other); err == nil || !strings.Contains(err.Error(), "lacks the manifest") {
		t.Errorf("a layout without the manifest asked for: %v", err)
	}
	// Anything but the layout's own regular files.
	for _, h := range []tar.Header{
		{Name: "../escape"},
		{Name: "blobs/sha256/../../etc/passwd"},
		{Name: "blobs/sha256/" + other, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		{Name: "rootfs/bin/sh"},
	} {
		bad, _ := layoutTar(t, map[string]string{"manifest": `{}`}, h)
		if _, err := extractLayout(bytes.NewReader(bad), t.TempDir(), "sha256:"+d["manifest"]); err == nil || !strings.Contains(err.Error(), "not part of an OCI layout") {
			t.Errorf("entry %q (type %c): %v, want refused", h.Name, h.Typeflag, err)
		}
	}
}
