package sandbox

import "testing"

// A spec may take a warm sandbox only when a sandbox booted ahead can give
// it everything: no network and no mounts beyond the attempt's own.
func TestKeyOfRefusesWhatABootedSandboxLacks(t *testing.T) {
	base := Spec{RootFS: "/r", CacheDir: "/c", CPU: 1, MemoryMB: 2048, PidsLimit: 512}
	if _, ok := KeyOf(&base); !ok {
		t.Fatal("plain spec: not warm-able")
	}
	withNet := base
	withNet.Network = true
	if _, ok := KeyOf(&withNet); ok {
		t.Error("a spec with a network took a warm sandbox")
	}
	withMount := base
	withMount.Mounts = []Mount{{}}
	if _, ok := KeyOf(&withMount); ok {
		t.Error("a spec with data-source or cache mounts took a warm sandbox")
	}
}
