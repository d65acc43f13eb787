package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/sandbox"
)

// output collects an attempt's streams: the head of stdout, the tail of
// stderr, a combined live tail, and the SKIFF_PROGRESS: lines of stdout.
// The driver writes stdout and stderr from two goroutines, hence the lock.
type output struct {
	progress func(json.RawMessage) // called for each valid progress line

	mu        sync.Mutex
	head      []byte // first StdoutMaxBytes of stdout
	truncated bool
	errTail   []byte // last StderrTailBytes of stderr
	liveTail  []byte // last OutputTailBytes of both
	line      []byte // stdout line being assembled (capped)
	lineLong  bool   // the current line outgrew ProgressMaxBytes

	// full, when set, receives stdout and stderr interleaved, whole, up
	// to fullMax bytes: the task's full output, uploaded as an artifact
	// when it outgrows the windows above (agentproto version 3).
	full      io.Writer
	fullN     int64
	fullMax   int64
	errTotal  int64
	fullError error
}

// keepFull sends a copy of everything to w, up to max bytes.
func (o *output) keepFull(w io.Writer, max int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.full, o.fullMax = w, max
}

// writeFullLocked copies p to the full output; a write error stops it.
func (o *output) writeFullLocked(p []byte) {
	if o.full == nil || o.fullError != nil || o.fullN >= o.fullMax {
		return
	}
	p = p[:min(int64(len(p)), o.fullMax-o.fullN)]
	n, err := o.full.Write(p)
	o.fullN += int64(n)
	o.fullError = err
}

// needsFull reports whether the windows lost anything, so the full output
// is worth keeping.
func (o *output) needsFull() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.full != nil && o.fullError == nil && (o.truncated || o.errTotal > agentproto.StderrTailBytes)
}

func (o *output) stdoutWriter() io.Writer { return writerFunc(o.writeStdout) }
func (o *output) stderrWriter() io.Writer { return writerFunc(o.writeStderr) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (o *output) writeStdout(p []byte) (int, error) {
	o.mu.Lock()
	o.writeFullLocked(p)
	if room := agentproto.StdoutMaxBytes - len(o.head); room > 0 {
		o.head = append(o.head, p[:min(room, len(p))]...)
		if len(p) > room {
			o.truncated = true
		}
	} else if len(p) > 0 {
		o.truncated = true
	}
	o.liveTail = appendTail(o.liveTail, p, agentproto.OutputTailBytes)
	var lines [][]byte
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			o.addLine(rest)
			break
		}
		o.addLine(rest[:i])
		if !o.lineLong {
			lines = append(lines, o.line)
		}
		o.line, o.lineLong = nil, false
		rest = rest[i+1:]
	}
	o.mu.Unlock()
	// Progress is handed on outside the lock: the reporter takes its own.
	for _, l := range lines {
		o.scanLine(l)
	}
	return len(p), nil
}

// addLine appends to the current line, giving up on lines too long to be
// progress (they still count as output).
func (o *output) addLine(b []byte) {
	if o.lineLong {
		return
	}
	if len(o.line)+len(b) > agentproto.ProgressMaxBytes+len(sandbox.ProgressPrefix) {
		o.line, o.lineLong = nil, true
		return
	}
	o.line = append(o.line, b...)
}

func (o *output) scanLine(l []byte) {
	l = bytes.TrimSuffix(l, []byte("\r"))
	rest, ok := bytes.CutPrefix(l, []byte(sandbox.ProgressPrefix))
	if !ok || o.progress == nil {
		return
	}
	rest = bytes.TrimSpace(rest)
	// Only a JSON object is progress (spec section 2.10 rule 4).
	if len(rest) == 0 || rest[0] != '{' || !json.Valid(rest) {
		return
	}
	o.progress(json.RawMessage(bytes.Clone(rest)))
}

func (o *output) writeStderr(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writeFullLocked(p)
	o.errTotal += int64(len(p))
	o.errTail = appendTail(o.errTail, p, agentproto.StderrTailBytes)
	o.liveTail = appendTail(o.liveTail, p, agentproto.OutputTailBytes)
	return len(p), nil
}

// flush treats an unterminated last stdout line as a line.
func (o *output) flush() {
	o.mu.Lock()
	l, long := o.line, o.lineLong
	o.line, o.lineLong = nil, false
	o.mu.Unlock()
	if len(l) > 0 && !long {
		o.scanLine(l)
	}
}

// final returns stdout's head, whether it was cut, and stderr's tail, as
// valid UTF-8.
func (o *output) final() (stdout string, truncated bool, stderr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.ToValidUTF8(string(o.head), "\uFFFD"), o.truncated, tailString(o.errTail)
}

func (o *output) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return tailString(o.liveTail)
}

// appendTail appends p to buf keeping at most n bytes, the newest.
func appendTail(buf, p []byte, n int) []byte {
	if len(p) >= n {
		return append(buf[:0], p[len(p)-n:]...)
	}
	if over := len(buf) + len(p) - n; over > 0 {
		buf = append(buf[:0], buf[over:]...)
	}
	return append(buf, p...)
}

// tailString drops a rune cut at the start of a tail.
func tailString(b []byte) string {
	for k := 0; k < 3 && len(b) > 0 && b[0]&0xC0 == 0x80; k++ {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
