package fleet

import (
	"github.com/skiffhq/skiff/internal/agentproto"
	"github.com/skiffhq/skiff/internal/job"
)

// jobOutcome is a host's report of an attempt's end, from the wire into the
// job service's own terms: fleet is the edge where the host protocol stops.
func jobOutcome(o *agentproto.Outcome) *job.Outcome {
	if o == nil {
		return nil
	}
	return &job.Outcome{
		ExitCode: o.ExitCode, TimedOut: o.TimedOut, OOMKilled: o.OOMKilled, Killed: o.Killed,
		SandboxError: o.SandboxError, StartFailed: o.StartFailed, StartedAt: o.StartedAt, EndedAt: o.EndedAt,
		Result: o.Result, ResultArtifactID: o.ResultArtifactID, Stdout: o.Stdout, Stderr: o.Stderr,
		FailureClass: o.FailureClass, HostError: o.HostError, StorageError: o.StorageError, ArtifactError: o.ArtifactError,
		GPUsAttached: o.GPUsAttached, Outputs: outputArtifacts(o.Artifacts),
	}
}

// outputArtifacts are the uploads of the artifact directory among an
// attempt's uploads (not its spilled result or full output).
func outputArtifacts(ups []agentproto.UploadedArtifact) []job.OutputArtifact {
	var out []job.OutputArtifact
	for _, u := range ups {
		if u.Kind == agentproto.ArtifactKindOutput || u.Kind == agentproto.ArtifactKindFailedOutput {
			out = append(out, job.OutputArtifact{ID: u.ID, Path: u.Path})
		}
	}
	return out
}
