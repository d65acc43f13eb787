package storetest

import (
	"testing"

	"github.com/skiffhq/skiff/internal/store"
)

// jobTests are the job store's conformance tests; Run adds them to its map.
var jobTests = map[string]func(*testing.T, store.Store){
	"JobCreateAndGet":          testJobCreateAndGet,
	"JobCreateAtomic":          testJobCreateAtomic,
	"JobCreateLarge":           testJobCreateLarge,
	"JobList":                  testJobList,
	"JobTransitions":           testJobTransitions,
	"JobSetStatusFields":       testJobSetStatusFields,
	"ProjectActiveJobCount":    testProjectActiveJobCount,
	"TaskClaimOrder":           testTaskClaimOrder,
	"TaskClaimFit":             testTaskClaimFit,
	"TaskClaimPlacement":       testTaskClaimPlacement,
	"TaskClaimAgreesWithSched": testTaskClaimAgreesWithSched,
	"JobDependencies":          testJobDependencies,
	"TaskClaimConcurrent":      testTaskClaimConcurrent,
	"CancelRacesClaims":        testCancelRacesClaims,
	"ClaimNeverBeforeRequeue":  testClaimNeverBeforeRequeue,
	"AttemptLifecycle":         testAttemptLifecycle,
	"TaskCancelOpen":           testTaskCancelOpen,
	"JobEvents":                testJobEvents,
	"JobSchemaChecks":          testJobSchemaChecks,
	"TaskTransitions":          testTaskTransitions,
	"AttemptTransitions":       testAttemptTransitions,
	"JobEventFeed":             testJobEventFeed,
	"JobEventPage":             testJobEventPage,
	"JobEventFeedCommitOrder":  testJobEventFeedCommitOrder,
}
