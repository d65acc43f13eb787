package artifact_test

import (
	"os"
	"testing"

	"github.com/skiffhq/skiff/internal/artifact"
	"github.com/skiffhq/skiff/internal/artifact/blobtest"
)

func TestLocalBlob(t *testing.T) {
	t.Parallel()
	blobtest.Run(t, blobtest.Harness{
		Open: func(t *testing.T) artifact.Blob {
			b, err := artifact.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Leftovers: func(t *testing.T, b artifact.Blob) []string {
			ents, err := os.ReadDir(b.(*artifact.Local).TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range ents {
				out = append(out, e.Name())
			}
			return out
		},
	})
}
