package tarball

import (
	"encoding/json"
	"testing"
)

func sampleTree() *Tree {
	return &Tree{
		Files: []File{
			{Path: "Dockerfile", Size: 1, SHA256: "aa"},
			{Path: "src/data/v1.txt", Size: 1, SHA256: "bb"},
			{Path: "src/main.py", Size: 1, SHA256: "cc"},
		},
		Dirs: []string{"cache", "src", "src/data"},
		Symlinks: []Symlink{
			{Path: "current", Target: "src/data"},
			{Path: "dangling", Target: "nowhere"},
			{Path: "src/latest", Target: "data/v1.txt"},
			{Path: "src/up", Target: ".."},
		},
	}
}

func TestTreeHasIsDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path       string
		has, isDir bool
	}{
		{"Dockerfile", true, false},
		{"./Dockerfile", true, false},
		{"src/main.py", true, false},
		{"src//main.py", true, false},
		{"src", true, true},
		{"src/", true, true},
		{"cache", true, true}, // an empty directory
		{".", true, true},
		{"./", true, true},
		{"current", true, true},            // symlink to a directory
		{"current/v1.txt", true, false},    // through a symlinked directory
		{"src/latest", true, false},        // symlink to a file
		{"src/up/Dockerfile", true, false}, // ".." through a link
		{"dangling", false, false},
		{"missing", false, false},
		{"src/main.py/x", false, false},
		{"/Dockerfile", false, false},
		{"../Dockerfile", false, false},
		{"src/../../Dockerfile", false, false},
		{"", false, false},
	}
	tree := sampleTree()
	for _, tt := range tests {
		if got := tree.Has(tt.path); got != tt.has {
			t.Errorf("Has(%q): got %v, want %v", tt.path, got, tt.has)
		}
		if got := tree.IsDir(tt.path); got != tt.isDir {
			t.Errorf("IsDir(%q): got %v, want %v", tt.path, got, tt.isDir)
		}
	}
}

// A Tree has no hidden index: one decoded from JSON answers the same.
func TestTreeJSONRoundTrip(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(sampleTree())
	if err != nil {
		t.Fatal(err)
	}
	var back Tree
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Has("current/v1.txt") || !back.IsDir("src") || back.ContentHash() != sampleTree().ContentHash() {
		t.Errorf("decoded tree answers differently: %s", data)
	}
}

func TestTreeFile(t *testing.T) {
	t.Parallel()
	tree := sampleTree()
	if f, ok := tree.File("./src/main.py"); !ok || f.SHA256 != "cc" {
		t.Errorf("File(./src/main.py): got %+v, %v; want the file", f, ok)
	}
	if _, ok := tree.File("src/latest"); ok {
		t.Errorf("File(src/latest): got a file, want none (symlinks are not followed)")
	}
}
