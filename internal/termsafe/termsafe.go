// Package termsafe keeps what strangers wrote (a feedback title, a host's
// name) from reaching an operator's terminal as anything but text: an ESC
// sequence in a waitlist entry could otherwise retitle the window, hide
// lines, rewrite what the operator reads, or worse on some terminals.
package termsafe

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unsafe reports whether r must not reach a terminal: C0 and C1 controls
// (ESC, CSI, BEL, backspace, carriage return...), DEL, and the invisible
// bidirectional and format controls that reorder or hide text (U+202E and
// its kind, U+2066-U+2069, zero-width characters).
func unsafe(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// Text is s fit for one cell of a table: every run of whitespace (new
// lines and tabs included, which would break the table) becomes one space,
// every other control or format character is dropped, and invalid UTF-8
// is dropped. It is the one function every operator command passes
// user-supplied text through.
func Text(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unsafe(r) || r == utf8.RuneError:
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// JSONWriter is w for encoded JSON: encoding/json escapes the C0 controls
// inside strings but passes DEL, the C1 controls (U+009B is a CSI on many
// terminals) and format characters through as they are; this writer turns
// them into \u escapes, which keeps the JSON equal in meaning and the
// terminal safe. Each Write must be whole JSON values (json.Encoder's
// Encode writes one value per call).
func JSONWriter(w io.Writer) io.Writer { return &jsonWriter{w: w} }

type jsonWriter struct{ w io.Writer }

func (j *jsonWriter) Write(p []byte) (int, error) {
	var b bytes.Buffer
	for rest := p; len(rest) > 0; {
		r, n := utf8.DecodeRune(rest)
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`) // not UTF-8: encoding/json never writes it
		case r != '\n' && unsafe(r) && r > 0xffff:
			hi, lo := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		case r != '\n' && unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.Write(rest[:n])
		}
		rest = rest[n:]
	}
	if _, err := j.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
