package diskfree_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/diskfree"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]diskfree.Watermark{
		"5%":       {Percent: 5},
		"2GiB":     {Bytes: 2 << 30},
		"500MB":    {Bytes: 500e6},
		"1024":     {Bytes: 1024},
		"1GiB, 5%": {Bytes: 1 << 30, Percent: 5},
		"0":        {},
		"0.5%":     {Percent: 0.5},
		"1.5 GiB":  {Bytes: 3 << 29},
	} {
		got, err := diskfree.Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "100%", "5%%", "GiB"} {
		if _, err := diskfree.Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
	if s := (diskfree.Watermark{Bytes: 1 << 30, Percent: 5}).String(); s != "1GiB,5%" {
		t.Errorf("String = %q", s)
	}
}

func TestLow(t *testing.T) {
	reading := diskfree.Reading{Free: 3 << 30, Total: 100 << 30}
	c := &diskfree.Checker{Dir: "/data", Min: diskfree.Watermark{Bytes: 1 << 30, Percent: 5},
		Stat: func(string) (diskfree.Reading, error) { return reading, nil }}
	low, why := c.Low()
	if !low || !strings.Contains(why, "/data has 3.0 GiB free of 100.0 GiB") || !strings.Contains(why, "5.0 GiB") {
		t.Errorf("3 GiB free of 100 under 5%%: low=%v %q", low, why)
	}
	reading.Free = 6 << 30
	if low, why := c.Low(); low {
		t.Errorf("6 GiB free of 100 is over 5%%: %q", why)
	}
	c.Min = diskfree.Watermark{Bytes: 8 << 30, Percent: 5}
	if low, _ := c.Low(); !low {
		t.Error("6 GiB free under an 8 GiB floor: not low")
	}
	c.Stat = func(string) (diskfree.Reading, error) { return diskfree.Reading{}, errors.New("gone") }
	if low, _ := c.Low(); low {
		t.Error("an unreadable filesystem is reported low")
	}
	var none *diskfree.Checker
	if low, _ := none.Low(); low {
		t.Error("nil checker low")
	}
	if _, err := diskfree.Statfs(t.TempDir()); err != nil {
		t.Error(err)
	}
}
