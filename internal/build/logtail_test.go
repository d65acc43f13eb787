package build

import "testing"

func TestTailWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{name: "fits", max: 16, writes: []string{"a\n", "b\n"}, want: "a\nb\n"},
		{name: "drops old lines and the partial first one", max: 8, writes: []string{"line1\n", "line2\n", "line3\n"}, want: "line3\n"},
		{name: "one big write", max: 8, writes: []string{"0123456789\nabc\n"}, want: "abc\n"},
		{name: "no newline to cut at", max: 4, writes: []string{"abcdefgh"}, want: "efgh"},
		{name: "invalid utf-8 after a cut", max: 4, writes: []string{"é€"}, want: "\uFFFD€"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := NewTailWriter(tt.max)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := w.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
