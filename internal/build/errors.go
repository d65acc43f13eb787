package build

import (
	"errors"
	"strings"
)

// FailureKind says why a project's build failed.
type FailureKind string

const (
	// FailureRejected: the Dockerfile breaks the build policy (policy.go) or
	// the request names files outside its context.
	FailureRejected FailureKind = "rejected"
	// FailureBuild: buildah failed: a syntax error, a failing RUN step, a
	// missing base image, a RUN step killed for memory.
	FailureBuild FailureKind = "build_failed"
	// FailureTimeout: the build ran past its timeout and was killed.
	FailureTimeout FailureKind = "timeout"
	// FailureValidation: the image lacks a declared executable or file.
	FailureValidation FailureKind = "validation_failed"
)

// UserError is a build failure that the project's owner caused and can fix.
// Its Error() is short and human, fit for a push record's error field. Any
// other error from Build is the operator's problem (buildah missing, disk
// full, cancelled by shutdown) and should not be blamed on the project.
type UserError struct {
	Kind    FailureKind
	Message string
	// Missing lists the validation paths that failed, for FailureValidation.
	Missing []string
	// Err is the underlying error, if any (buildah's exit status).
	Err error
}

func (e *UserError) Error() string { return e.Message }

func (e *UserError) Unwrap() error { return e.Err }

// AsUserError returns the UserError in err's chain, if there is one.
func AsUserError(err error) (*UserError, bool) {
	var ue *UserError
	ok := errors.As(err, &ue)
	return ue, ok
}

// Markers in buildah's own error line that a failure was the machine's, not
// the project's. Only that line is searched: a RUN step can print anything.
var infraFailureMarkers = []string{
	"no space left on device",
	"disk quota exceeded",
}

// classifyBuildahFailure turns a failed `buildah bud` into an error. Most
// failures are the project's, except the few that the markers above give away.
func classifyBuildahFailure(err error, logTail string, memoryLimit string) error {
	line := lastErrorLine(logTail)
	if !strings.Contains(line, "while running runtime") {
		lower := strings.ToLower(line)
		for _, m := range infraFailureMarkers {
			if strings.Contains(lower, m) {
				return &infraError{msg: "buildah failed on the build host: " + m, err: err}
			}
		}
	}
	msg := "build failed: " + err.Error()
	if line != "" {
		msg = "build failed: " + line
	}
	// This is how a RUN step killed by the cgroup's OOM killer shows up.
	if strings.Contains(logTail, "container exited on killed") {
		msg += " (the step was killed; it may have run out of its " + memoryLimit + " memory limit)"
	}
	return &UserError{Kind: FailureBuild, Message: msg, Err: err}
}

// lastErrorLine returns buildah's final "Error: ..." line without its prefix. It names the
// failing step ("building at STEP \"RUN ...\": while running runtime: exit
// status 3").
func lastErrorLine(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if rest, ok := strings.CutPrefix(line, "Error: "); ok {
			return rest
		}
	}
	return ""
}

// infraError is a build failure that is the build host's fault.
type infraError struct {
	msg string
	err error
}

func (e *infraError) Error() string { return e.msg + ": " + e.err.Error() }

func (e *infraError) Unwrap() error { return e.err }
