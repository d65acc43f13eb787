package contact

import "testing"

func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"you@example.com", "you@example.com"},
		{"  You@Example.COM ", "you@example.com"},
		{"first.last+tag@sub.example.org", "first.last+tag@sub.example.org"},
		{"", ""},
		{"you", ""},
		{"you@localhost", ""},
		{"you@.example.com", ""},
		{"you@example..com", ""},
		{"You <you@example.com>", ""},
		{"a@example.com, b@example.com", ""},
	} {
		got, err := NormalizeEmail(tc.in)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
