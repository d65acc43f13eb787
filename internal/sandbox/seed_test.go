package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// An empty cache is filled from the seed; one that holds anything is left
// as it is (a task's work is never overwritten by the seed).
func TestSeedMount(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed")
	if err := os.MkdirAll(filepath.Join(seed, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seed, "sub", "a.txt"), []byte("seeded"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "caches", "prj_1", "wheels")
	m := Mount{Source: cache, Destination: "/cache/wheels", Seed: seed}
	if err := seedMount(m, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(cache, "sub", "a.txt")); err != nil || string(b) != "seeded" {
		t.Fatalf("seeded cache: got %q (%v), want the seed's file", b, err)
	}
	if err := os.WriteFile(filepath.Join(cache, "sub", "a.txt"), []byte("task wrote"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := seedMount(m, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(cache, "sub", "a.txt")); string(b) != "task wrote" {
		t.Errorf("non-empty cache: got %q, want what the task wrote", b)
	}
	left, _ := filepath.Glob(cache + ".seed-*")
	if len(left) != 0 {
		t.Errorf("temporary copies left: %v", left)
	}
}
