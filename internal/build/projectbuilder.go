package build

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/project"
)

// ProjectBuilder adapts a Builder to what the project service asks of a
// builder (project.ImageBuilder), and tells the project's faults, with the
// next action to take for each kind, from the platform's. The server and
// the tests use this one adapter, so the one in production is the one
// under test.
type ProjectBuilder struct{ B *Builder }

var _ project.ImageBuilder = ProjectBuilder{}

func (pb ProjectBuilder) Build(ctx context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	dockerfile, err := filepath.Rel(req.ContextDir, req.Dockerfile)
	if err != nil {
		return nil, fmt.Errorf("dockerfile outside the build context: %w", err)
	}
	res, err := pb.B.Build(ctx, Request{
		ContextDir: req.ContextDir, Dockerfile: dockerfile, Tag: req.Tag, BuildArgs: req.BuildArgs, Target: req.Target,
		Timeout: req.Timeout, ValidateExecutables: req.ValidateExecutables, ValidateFiles: req.ValidateFiles, Log: req.Log,
	})
	if err != nil {
		if ue, ok := AsUserError(err); ok {
			return nil, &project.UserBuildError{Message: ue.Message, NextAction: NextAction(ue)}
		}
		return nil, err
	}
	return &project.BuildResult{ImageRef: res.ImageRef, ImageDigest: res.ImageDigest}, nil
}

// NextAction is what a user should do about a failed build of kind ue.Kind.
func NextAction(ue *UserError) string {
	switch ue.Kind {
	case FailureTimeout:
		return "Make the build faster, or raise setup_timeout_s with PUT /api/v1/projects/{name}, then push again."
	case FailureValidation:
		return "Make the Dockerfile produce the paths listed in validation, or fix skiff.project.json, then push again."
	case FailureRejected:
		return "Use FROM scratch or an allowed base image, keep every path inside the project, then push again."
	}
	return "Read log_tail, fix the Dockerfile, then push again."
}
