package tarball

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestIndex(t *testing.T) {
	t.Parallel()
	idx := sampleTree().Index()
	if len(idx.Files) != 3 || idx.Files["src/main.py"] != "cc" {
		t.Errorf("files: got %v, want the three files with their digests", idx.Files)
	}
	if idx.Symlinks["src/up"] != ".." || len(idx.Symlinks) != 4 {
		t.Errorf("symlinks: got %v, want the four links", idx.Symlinks)
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	prev := &FileIndex{
		Files:      map[string]string{"same": "1", "edit": "1", "chmod": "1", "gone": "1", "tolink": "1"},
		Executable: []string{"chmod"},
		Symlinks:   map[string]string{"link": "same", "retarget": "same", "tofile": "same"},
	}
	next := &FileIndex{
		Files:    map[string]string{"same": "1", "edit": "2", "chmod": "1", "new": "1", "tofile": "same"},
		Symlinks: map[string]string{"link": "same", "retarget": "edit", "tolink": "1", "newlink": "x"},
	}
	tests := []struct {
		name       string
		prev, next *FileIndex
		want       Changes
	}{
		{"first push", nil, next, Changes{
			AddedFiles:   []string{"chmod", "edit", "link", "new", "newlink", "retarget", "same", "tofile", "tolink"},
			RemovedFiles: []string{}, ChangedFiles: []string{},
		}},
		{"no change", prev, prev, Changes{AddedFiles: []string{}, RemovedFiles: []string{}, ChangedFiles: []string{}}},
		{"changes", prev, next, Changes{
			AddedFiles:   []string{"new", "newlink"},
			RemovedFiles: []string{"gone"},
			ChangedFiles: []string{"chmod", "edit", "retarget", "tofile", "tolink"},
		}},
		{"everything removed", prev, nil, Changes{
			AddedFiles:   []string{},
			RemovedFiles: []string{"chmod", "edit", "gone", "link", "retarget", "same", "tofile", "tolink"},
			ChangedFiles: []string{},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Diff(tt.prev, tt.next)
			if !slices.Equal(got.AddedFiles, tt.want.AddedFiles) || !slices.Equal(got.RemovedFiles, tt.want.RemovedFiles) || !slices.Equal(got.ChangedFiles, tt.want.ChangedFiles) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got.Empty() != (tt.name == "no change") {
				t.Errorf("Empty(): got %v", got.Empty())
			}
		})
	}
}

// The index survives the trip through the database as JSON, and the diff
// renders with empty lists rather than nulls.
func TestDiffAfterJSON(t *testing.T) {
	t.Parallel()
	stored, err := json.Marshal(sampleTree().Index())
	if err != nil {
		t.Fatal(err)
	}
	var prev FileIndex
	if err := json.Unmarshal(stored, &prev); err != nil {
		t.Fatal(err)
	}
	next := sampleTree()
	next.Files[0].SHA256 = "changed"
	idx := next.Index()
	out, err := json.Marshal(Diff(&prev, &idx))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"added_files":[],"removed_files":[],"changed_files":["Dockerfile"]}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}
