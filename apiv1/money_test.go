package apiv1

import "testing"

func TestUSDRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want USD
		out  string
	}{
		{"0", 0, "0"}, {"12", 12_000_000, "12"}, {"0.01", 10_000, "0.01"},
		{"0.000001", 1, "0.000001"}, {"-1.5", -1_500_000, "-1.5"}, {"10000.123456", 10_000_123_456, "10000.123456"},
	} {
		got, err := ParseUSD(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if s := got.String(); s != tc.out {
			t.Errorf("USD(%d).String() = %q, want %q", got, s, tc.out)
		}
	}
	for _, bad := range []string{"", "1.", ".5", "1e3", "NaN", "0.0000001", "1,5", "abc", "99999999999999", "--1", "\"5\""} {
		if v, err := ParseUSD(bad); err == nil {
			t.Errorf("ParseUSD(%q) = %d, want an error", bad, v)
		}
	}
}
