package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// schemas are the tools' input schemas, derived from the same Go types as
// the API (apiv1) once per process.
type schemas struct {
	byType map[reflect.Type]*jsonschema.Schema
}

// typeSchemas override what the schema inference cannot read from a type:
// a json.RawMessage field holds any JSON value (the inference would say
// "an array of bytes").
var typeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
}

func newSchemas() (*schemas, error) {
	s := &schemas{byType: map[reflect.Type]*jsonschema.Schema{}}
	for _, in := range toolInputs {
		sc, err := jsonschema.ForType(in, &jsonschema.ForOptions{TypeSchemas: typeSchemas})
		if err != nil {
			return nil, fmt.Errorf("mcp: input schema of %s: %w", in, err)
		}
		s.byType[in] = sc
	}
	return s, nil
}

// toolInputs are the input types of every tool; a tool whose input is not
// listed here fails New's test.
var toolInputs = []reflect.Type{
	reflect.TypeFor[noInput](), reflect.TypeFor[projectInput](), reflect.TypeFor[projectStatusInput](),
	reflect.TypeFor[submitInput](), reflect.TypeFor[jobInput](), reflect.TypeFor[listTasksInput](),
	reflect.TypeFor[waitInput](), reflect.TypeFor[resultInput](), reflect.TypeFor[listResultsInput](),
	reflect.TypeFor[cancelInput](), reflect.TypeFor[outputInput](), reflect.TypeFor[listArtifactsInput](),
	reflect.TypeFor[artifactInput](), reflect.TypeFor[topupInput](), reflect.TypeFor[feedbackInput](),
	reflect.TypeFor[pushInput](), reflect.TypeFor[downloadInput](),
}

type noInput struct{}

// kind says what a tool does to the account, for the host's annotations.
type kind int

const (
	reads   kind = iota // reads only
	writes              // changes something (submits, cancels, pushes)
	retries             // changes something, and calling it again with the same input is safe
)

// add registers a tool whose input is In: the schema comes from schemas,
// the handler's error becomes a tool error (errorResult) and its answer the
// structured content (an object).
func add[In any](t *Tools, s *sdk.Server, k kind, name, title, desc string,
	run func(ctx context.Context, req *sdk.CallToolRequest, in In) (any, error)) {
	schema, ok := t.schemas.byType[reflect.TypeFor[In]()]
	if !ok {
		panic(fmt.Sprintf("mcp: tool %s: input type %s missing from toolInputs", name, reflect.TypeFor[In]()))
	}
	ann := &sdk.ToolAnnotations{Title: title, ReadOnlyHint: k == reads, IdempotentHint: k != writes}
	if k != reads {
		ann.DestructiveHint = ptr(false)
	}
	sdk.AddTool(s, &sdk.Tool{Name: name, Title: title, Description: desc, InputSchema: schema, Annotations: ann},
		func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
			out, err := run(ctx, req, in)
			if err != nil {
				return errorResult(err), nil, nil
			}
			return nil, out, nil
		})
}

func ptr[T any](v T) *T { return &v }
