package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/skiffhq/skiff/internal/build"
	"github.com/skiffhq/skiff/internal/project"
)

// imageBuilder adapts the buildah builder to what the project service asks
// of a builder, and tells the project's faults from the platform's.
type imageBuilder struct{ b *build.Builder }

func (ib imageBuilder) Build(ctx context.Context, req project.BuildRequest) (*project.BuildResult, error) {
	dockerfile, err := filepath.Rel(req.ContextDir, req.Dockerfile)
	if err != nil {
		return nil, fmt.Errorf("dockerfile outside the build context: %w", err)
	}
	res, err := ib.b.Build(ctx, build.Request{
		ContextDir: req.ContextDir, Dockerfile: dockerfile, Tag: req.Tag, BuildArgs: req.BuildArgs, Target: req.Target,
		Timeout: req.Timeout, ValidateExecutables: req.ValidateExecutables, ValidateFiles: req.ValidateFiles, Log: req.Log,
	})
	if err != nil {
		if ue, ok := build.AsUserError(err); ok {
			return nil, &project.UserBuildError{Message: ue.Message, NextAction: nextActionFor(ue)}
		}
		return nil, err
	}
	return &project.BuildResult{ImageRef: res.ImageRef, ImageDigest: res.ImageDigest}, nil
}

func nextActionFor(ue *build.UserError) string {
	switch ue.Kind {
	case build.FailureTimeout:
		return "Make the build faster, or raise setup_timeout_s with PUT /api/v1/projects/{name}, then push again."
	case build.FailureValidation:
		return "Make the Dockerfile produce the paths listed in validation, or fix skiff.project.json, then push again."
	case build.FailureRejected:
		return "Use FROM scratch or an allowed base image, keep every path inside the project, then push again."
	}
	return "Read log_tail, fix the Dockerfile, then push again."
}
