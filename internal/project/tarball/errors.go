package tarball

import (
	"fmt"
	"strings"
)

// Kind says how a push body failed, so the HTTP layer can pick a status
// without inspecting messages.
type Kind int

const (
	// KindNotGzip: the body is not a valid gzip stream (HTTP 400).
	KindNotGzip Kind = iota + 1
	// KindNotTar: the body is gzip but what it holds is not a tar archive
	// (HTTP 422, error text "invalid tarball").
	KindNotTar
	// KindInvalid: a well-formed archive that breaks a rule: an unsafe
	// path or link, a forbidden entry type, a limit (HTTP 422).
	KindInvalid
)

// String returns the kind's stable machine name.
func (k Kind) String() string {
	switch k {
	case KindNotGzip:
		return "not_gzip"
	case KindNotTar:
		return "not_tar"
	case KindInvalid:
		return "invalid"
	default:
		return fmt.Sprintf("kind(%d)", int(k))
	}
}

// Problem is one thing wrong with the archive. Path is the entry's name as
// written in the archive; it is empty for problems of the whole stream, such
// as a limit.
type Problem struct {
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return fmt.Sprintf("%q: %s", p.Path, p.Message)
}

// maxProblems caps how many problems one error carries: enough to fix a
// batch of mistakes at once, bounded so a hostile archive cannot make the
// error response large.
const maxProblems = 50

// Error is the failure of an extraction caused by the pushed bytes. Every
// other error Extract returns (disk full, cancelled context) is the server's
// or the caller's, not the client's.
type Error struct {
	Kind Kind
	// Problems names each thing found wrong. A KindInvalid error always has
	// at least one; the other kinds carry one describing the decoder's
	// complaint.
	Problems []Problem
	// Truncated is set when more problems were found than Problems holds.
	Truncated bool
	// Err is the decoder error behind a KindNotGzip or KindNotTar error.
	Err error
}

// Message is the client-facing summary, without the per-entry details.
func (e *Error) Message() string {
	switch e.Kind {
	case KindNotGzip:
		return "request body is not valid gzip"
	case KindNotTar:
		return "invalid tarball"
	default:
		return "invalid tarball: unsafe or unsupported entries"
	}
}

// Details renders Problems as one line each, the shape the HTTP error
// envelope's details carry.
func (e *Error) Details() []string {
	out := make([]string, 0, len(e.Problems)+1)
	for _, p := range e.Problems {
		out = append(out, p.String())
	}
	if e.Truncated {
		out = append(out, fmt.Sprintf("more problems were found; only the first %d are listed", maxProblems))
	}
	return out
}

// RecommendedAction tells the client what to do next.
func (e *Error) RecommendedAction() string {
	switch e.Kind {
	case KindNotGzip:
		return "Send the project as a raw gzip-compressed tar body, e.g. `tar -C myproject -czf project.tgz .` and post project.tgz as the request body."
	case KindNotTar:
		return "The gzip stream must hold a tar archive; build it with `tar -C myproject -czf project.tgz .`."
	default:
		return "Remove or fix the entries listed in details (no absolute paths, no '..', no links leaving the project, no device files), then push again."
	}
}

// Error implements error. For KindNotTar it is exactly "invalid tarball",
// the text the API contract promises.
func (e *Error) Error() string {
	if e.Kind == KindNotTar || len(e.Problems) == 0 {
		return e.Message()
	}
	var b strings.Builder
	b.WriteString(e.Message())
	b.WriteString(": ")
	b.WriteString(strings.Join(e.Details(), "; "))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// problemList gathers problems up to maxProblems.
type problemList struct {
	items     []Problem
	truncated bool
}

func (l *problemList) add(path, format string, args ...any) {
	if len(l.items) >= maxProblems {
		l.truncated = true
		return
	}
	l.items = append(l.items, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (l *problemList) full() bool { return len(l.items) >= maxProblems }

// err returns the gathered problems as a KindInvalid error, or nil.
func (l *problemList) err() error {
	if len(l.items) == 0 {
		return nil
	}
	return &Error{Kind: KindInvalid, Problems: l.items, Truncated: l.truncated}
}
