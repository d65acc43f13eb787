package mountinfo

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestBelow(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mountinfo")
	lines := "22 1 8:1 / / rw - ext4 /dev/vda rw\n" +
		"30 22 7:0 / /data/work/att_1/disk rw - ext4 /dev/loop0 rw\n" +
		"31 22 0:50 / /data/work\\040two/x rw - tmpfs tmpfs rw\n" +
		"32 22 0:51 / /data rw - tmpfs tmpfs rw\n" +
		"33 22 0:52 / /database/y rw - tmpfs tmpfs rw\n" +
		"short line\n"
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Below(file, "/data/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/data/work/att_1/disk", "/data/work two/x"}
	if !slices.Equal(got, want) {
		t.Errorf("Below(/data/): got %q, want %q (not /data itself, not /database)", got, want)
	}
}
