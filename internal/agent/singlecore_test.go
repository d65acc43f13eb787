package agent

import (
	"math"
	"testing"
	"time"
)

// The score is the baseline's time over this machine's: the reference
// machine scores 1.0, one twice as fast 2.0, one half as fast 0.5.
func TestSingleCoreScoreAgainstBaseline(t *testing.T) {
	for _, c := range []struct {
		took time.Duration
		want float64
	}{
		{BaselineWorkloadTime, 1.0},
		{BaselineWorkloadTime / 2, 2.0},
		{BaselineWorkloadTime * 2, 0.5},
		{BaselineWorkloadTime * 1000, 0.01}, // never 0, which would read as unmeasured
		{0, singleCoreScore(time.Nanosecond)},
	} {
		if got := singleCoreScore(c.took); got != c.want {
			t.Errorf("a workload of %v scores %v, want %v", c.took, got, c.want)
		}
	}
	// The workload is fixed: the same answer every run.
	if a, b := singleCoreWorkload(1000), singleCoreWorkload(1000); a != b {
		t.Errorf("the workload is not deterministic: %d then %d", a, b)
	}
}

// A measurement on this machine gives a usable score: positive, finite,
// with two decimals.
func TestMeasureSingleCore(t *testing.T) {
	s := MeasureSingleCore()
	if !(s > 0) || math.IsInf(s, 0) || math.Round(s*100)/100 != s {
		t.Fatalf("measured score %v, want a positive number with two decimals", s)
	}
	t.Logf("this machine scores %.2f", s)
}
