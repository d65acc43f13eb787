package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestTextDropsWhatATerminalWouldObey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain title":                          "plain title",
		"\x1b]0;owned\x07\x1b[2J\x1b[31mred":   "]0;owned[2J[31mred",
		"two\nlines\r\tand  tabs":              "two lines and tabs",
		"csi\u009b31m c1":                      "csi31m c1",
		"del\x7f and bs\b":                     "del and bs",
		"bidi \u202egnp.exe\u202c zero\u200bw": "bidi gnp.exe zerow",
		"bad utf8 \xff\xfe end":                "bad utf8 end",
		"  leading and trailing \n":            "leading and trailing",
		"üñí 中文 emoji 🚀":                       "üñí 中文 emoji 🚀",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONWriterEscapesWhatJSONLetsThrough(t *testing.T) {
	t.Parallel()
	in := map[string]string{"title": "\x1b[31m csi\u009b del\x7f rlo\u202e ok ü 🚀 \U000E0001tag"}
	var buf bytes.Buffer
	if err := json.NewEncoder(JSONWriter(&buf)).Encode(in); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, r := range out {
		if r != '\n' && unsafe(r) {
			t.Fatalf("output %q holds %U", out, r)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["title"] != in["title"] {
		t.Errorf("round trip: got %q, %v; want %q", back["title"], err, in["title"])
	}
	if !strings.HasSuffix(out, "}\n") {
		t.Errorf("output %q lost its line end", out)
	}
}
